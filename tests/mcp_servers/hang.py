"""A test server that starts but never answers anything (reads and ignores stdin).
Writes its pid to the file named by argv[1] so a test can check it is gone after close."""

import os
import sys
import time

if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as fh:
        fh.write(str(os.getpid()))
while True:
    # ignore stdin (even EOF): a hung server must be killed by the client
    time.sleep(3600)
