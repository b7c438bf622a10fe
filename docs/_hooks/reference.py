"""mkdocs hook: the reference pages are generated from the code at build time, never committed, so they
cannot go stale and parallel changes to the config or the commands never conflict in them."""

from mkdocs.structure.files import File


def on_files(files, config):
    import sys
    from pathlib import Path

    from specbench.cli import app
    from specbench.cli.reference import cli_reference, config_reference

    sys.path.insert(0, str(Path(__file__).parent))
    from architecture import architecture_page

    pages = (
        ("reference/config.md", config_reference()),
        ("reference/cli.md", cli_reference(app)),
        ("reference/architecture.md", architecture_page()),
    )
    for path, text in pages:
        files.append(File.generated(config, path, content=text))
    return files
