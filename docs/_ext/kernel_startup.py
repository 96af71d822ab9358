"""Run first in each vignette's kernel when the documentation is built (``PYTHONSTARTUP``).

A progress bar is stderr: drawn into an executed notebook it is a frozen, half-finished bar on
the page, and the build treats a vignette's stderr as a failure (``nb_output_stderr`` in
conf.py). So the pages are built without bars; a reader running a vignette gets them.
"""

import pearlstats

pearlstats.set_option("progress", False)
