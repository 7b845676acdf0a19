from mermaid_cli.cli.entry import main

main()
