"""Starting Spark and speaking to it: lazy imports, Java, errors without data.

pyspark is optional and untyped: it is imported on first use (a missing package names
the extra to install) and handled as ``Any``.  Spark's failures become safeshare errors
that name the step and Spark's error class - never Spark's message, which may quote a
record, and never a Py4J traceback.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from safeshare.errors import EngineJobError, MissingDependencyError

DEFAULT_MASTER = "local[2]"
_DEFAULT_CONF: dict[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.log.level": "ERROR",
}
_INSTALL_JAVA = (
    "Spark 4 runs on Java 17 or 21: install a JDK (e.g. `apt install openjdk-17-jre-headless`) "
    "and put `java` on PATH or set JAVA_HOME"
)


class SparkJobError(EngineJobError):
    """A Spark job failed; the message names the step and Spark's error class (no data)."""


def require_pyspark() -> Any:
    """The pyspark.sql module, or a clear error naming the extra to install."""
    return pyspark_module("pyspark.sql")


def pyspark_module(name: str) -> Any:
    """A module of pyspark (or py4j), imported on first use; pyspark is untyped here: Any."""
    try:
        importlib.import_module("pyspark")  # the package first: a clear ImportError
        return importlib.import_module(name)
    except ImportError:
        raise MissingDependencyError(
            "the spark engine needs the pyspark package; install it with: "
            "pip install 'safeshare[spark]'"
        ) from None


def require_java() -> None:
    """Refuse early, with the fix, where no ``java`` would start Spark's JVM."""
    home = os.environ.get("JAVA_HOME")
    if home:
        if not (Path(home) / "bin" / "java").is_file():
            raise MissingDependencyError(
                f"JAVA_HOME is {home!r} but holds no bin/java; point it at a JDK. {_INSTALL_JAVA}"
            )
        return
    if shutil.which("java") is None:
        raise MissingDependencyError(f"the spark engine needs Java, found none. {_INSTALL_JAVA}")


def spark_errors() -> tuple[type[BaseException], ...]:
    """The exceptions Spark raises: its own (captured from the JVM) and Py4J's."""
    return (
        pyspark_module("pyspark.errors").PySparkException,
        pyspark_module("py4j.protocol").Py4JError,
        ConnectionError,  # the JVM went away
    )


def spark_failure(err: BaseException) -> str:
    """Spark's name for an error (e.g. ``CAST_INVALID_INPUT``), never its message (data, maybe)."""
    name = None
    if isinstance(err, pyspark_module("pyspark.errors").PySparkException):
        name = quietly(err.getCondition)
    elif isinstance(err, pyspark_module("py4j.protocol").Py4JJavaError):
        name = quietly(lambda: err.java_exception.getClass().getName())
    return str(name) if name else type(err).__name__


def quietly(call: Callable[[], Any]) -> Any:
    """``call()``, or None where Spark fails (e.g. its JVM is gone while asking for a name)."""
    try:
        return call()
    except spark_errors():
        return None


def start_session(
    sql: Any, master: str | None, app_name: str, conf: Mapping[str, str | int | float | bool]
) -> tuple[Any, bool]:
    """A SparkSession (started here unless one runs already) and whether this call started it."""
    owns = pyspark_module("pyspark").SparkContext._active_spark_context is None
    if owns:
        require_java()
    builder = sql.SparkSession.builder.appName(app_name)
    if master is None and owns and not _submitted_master():
        master = DEFAULT_MASTER
    if master is not None:
        builder = builder.master(master)
    for key, value in {**_DEFAULT_CONF, **{k: _conf_text(v) for k, v in conf.items()}}.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except spark_errors() as err:
        failure = spark_failure(err)
        if "JAVA_GATEWAY" in failure:
            raise MissingDependencyError(
                f"Spark's JVM did not start ({failure}). {_INSTALL_JAVA}; "
                "`java -version` must report 17 or later"
            ) from None
        raise SparkJobError(
            f"Spark did not start ({failure}); check the master URL and configuration"
        ) from None
    return session, owns


def _submitted_master() -> bool:
    """Whether spark-submit or spark-defaults.conf names a master (read before any JVM starts)."""
    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # launched by spark-submit: it passed a master
        return True
    if "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return True
    home = os.environ.get("SPARK_CONF_DIR") or (
        str(Path(os.environ["SPARK_HOME"]) / "conf") if os.environ.get("SPARK_HOME") else None
    )
    if home is None:
        return False
    defaults = Path(home) / "spark-defaults.conf"
    if not defaults.is_file():
        return False
    lines = defaults.read_text(encoding="utf-8", errors="replace").splitlines()
    return any(line.split()[:1] == ["spark.master"] for line in lines)


def _conf_text(value: str | int | float | bool) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
