"""Stands in for a web browser (set as $BROWSER): opens the URL and follows redirects."""

import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=30) as response:
    sys.exit(0 if response.status == 200 else 1)
