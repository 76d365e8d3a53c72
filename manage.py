#!/usr/bin/env python
from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trustrag_site.settings")
    # Every command works with no separate start step: the embedded Postgres and Redis that
    # the environment does not point elsewhere start here (the settings only read where).
    from apps.core.embedded import start_unconfigured

    start_unconfigured(Path(__file__).resolve().parent)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
