"""User-facing errors: the CLI prints them as one line and exits with code 2."""


class TrainplanError(ValueError):
    """Bad input from the user (unknown model, impossible setup, malformed file)."""


class UnknownNameError(TrainplanError):
    """A catalog lookup failed; the message carries 'did you mean ...'."""
