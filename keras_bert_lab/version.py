"""The package version (its own module, so that low layers can record it without importing the
package's public API)."""

__version__ = "0.1.0"
