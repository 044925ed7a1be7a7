"""The ``podium`` command (``podium_cli.app``): a Podium stack's admin command line.

Its modules: ``app`` (the commands, and errors reported in one place), ``connection`` (the
API's URL and the admin's token), ``boards``, ``importing`` (the command) with
``readers`` (CSV and JSON Lines), ``importer`` (the threads) and ``checkpoint`` (resuming),
``exporting``, ``tokens``, ``operations`` (redrive, verify, rebuild: the table directly),
``plan`` (the capacity planner), ``progress`` and ``output``. docs/cli.md is its manual.
"""
