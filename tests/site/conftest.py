"""The browser and the served site (defined in test_browser.py) for every browser test module."""

from test_browser import browser, server  # noqa: F401
