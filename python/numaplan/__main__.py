"""`python -m numaplan ARGS...` runs the numaplan executable this package ships."""

import os
import sys

from ._binary import executable
from ._errors import Error

if __name__ == "__main__":
    try:
        binary = executable()
    except Error as e:
        print(e, file=sys.stderr)
        sys.exit(3)
    os.execv(binary, [binary, *sys.argv[1:]])
