from mermaid_cli.cli import main

main()
