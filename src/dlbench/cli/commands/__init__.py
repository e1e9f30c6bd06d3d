"""The commands of ``dlbench``, one module per family: ``run`` (run, plan), ``status``,
``results`` (parse, query), ``report`` (report, baseline), ``compare``, ``plot``,
``definitions``, ``host`` (sysinfo, peak), ``history`` and ``help``.
:mod:`dlbench.cli.main` builds the parser and imports the heavy ones only when their
command runs."""
