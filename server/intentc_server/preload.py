"""Imported once by the forkserver that forks the compile workers: it loads the compiler and
builds its parser, so every worker (and every replacement of a killed one) starts warm."""
from .worker import warm_up

warm_up()
