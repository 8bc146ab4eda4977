"""release/: the main job. One call turns a sensitive table into a safe artifact, a privacy
card and a report; see :func:`safeshare.release.pipeline.release`."""

from safeshare.release.pipeline import METHODS, ReleaseResult, release

__all__ = ["METHODS", "ReleaseResult", "release"]
