"""SYN — the checker itself: syntax errors (SYN001), files it could not analyse (SYN002) and
suppression comments that suppress nothing (SYN003).

One rule a file (``synNNN_<name>.py``).
"""
