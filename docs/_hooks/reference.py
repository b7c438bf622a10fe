"""mkdocs hook: the reference pages are generated from the code at build time, never committed, so they
cannot go stale and parallel changes to the config or the commands never conflict in them."""

from mkdocs.structure.files import File


def on_files(files, config):
    from specbench.cli import app
    from specbench.cli.reference import cli_reference, config_reference

    for path, text in (("reference/config.md", config_reference()), ("reference/cli.md", cli_reference(app))):
        files.append(File.generated(config, path, content=text))
    return files
