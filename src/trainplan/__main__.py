"""The `trainplan` executable and `python -m trainplan`.

The cyclic garbage collector is off from here on, before the first import: the passes it makes over
the freshly imported modules' objects (28 in a one-shot estimate, several of them over the whole
heap) took 2.3 of its ~26 ms in process. trainplan.cli.run keeps it off only for the one-shot
commands that end at os._exit (cli.FAST_EXIT: estimate, plan, fit, table and the catalog listings),
which make no reference cycles worth collecting (reference counting frees their memory as ever),
and turns it back on for every other command.
"""

import gc

gc.disable()

from trainplan.cli import run  # noqa: E402 - imported with the collector off

if __name__ == "__main__":
    run()
