"""What a run reports: the output formats (``formats``), baselines (``baseline``), ``# noqa``
writing (``noqa``), the jobs as job-spec YAML (``show``) and the rule pages (``ruledocs``)."""
