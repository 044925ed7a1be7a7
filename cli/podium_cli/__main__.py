"""``python -m podium_cli``: the ``podium`` command, for a venv whose bin is not on PATH."""

from podium_cli.app import main

main()
