"""Stage kernels: kernel-level pairs: each kernel's source and assembly on both vendors.

The work: :func:`cass.text.kernels.run`.
"""

from cass.pipeline.context import Stage
from cass.text.kernels import run

if __name__ == "__main__":
    run(Stage("kernels"))
