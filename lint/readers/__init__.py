"""Readers: one module per format, each turning a file into :class:`parallint.model.facts.FileFacts`.

The runner imports a reader only when a file of its kind is found (see ``parallint.discover.classify``).
"""
