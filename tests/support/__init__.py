"""What the tests share: paths, the browser page helper, references computed in CPython, test data."""
