"""`mermaid report`: a run or a batch as a picture. `model` reads an events stream, a session file
or a batch results file into one typed `RunReport`/`BatchReport`; `markdown` renders it with a
Mermaid `gantt` timeline (GitHub draws those in step summaries and comments); `html` renders one
self-contained page with inline SVG and no network. Everything shown comes from files a run
wrote, which may hold text a hostile repository or web page put there: every renderer escapes it.
"""
