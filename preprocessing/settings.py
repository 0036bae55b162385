"""What one Preprocess run is asked to do, typed and built once from its command line (``command.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from containerlib.exit_message import EXIT_MESSAGE_FILE
from containerlib.hosts import RESOURCE_CONFIG
from preprocessing import PreprocessError

MISSING_POLICIES = ("impute", "error", "zero", "drop")


@dataclass(frozen=True)
class Settings:
    """The job's arguments; lists are tuples, empty when not given (the decided schema may then decide them)."""

    label_column: str
    predictor_type: str
    input_dir: Path = Path("/opt/ml/processing/input/data")
    input_source: str | None = None  # the input's S3 URI: messages name files by it
    output_dir: Path = Path("/opt/ml/processing/output")
    resource_config: Path = Path(RESOURCE_CONFIG)
    exit_message_file: Path = Path(EXIT_MESSAGE_FILE)
    schema: Path | None = None  # the decided schema: a JSON file or a folder holding one
    feature_columns: tuple[str, ...] = ()
    id_column: str | None = None
    categorical_columns: tuple[str, ...] = ()
    hash_buckets: int = 0  # 0: the schema's encodings (hashed columns without one: 16 buckets); N: all hashed into N
    label_values: tuple[str, ...] = ()
    num_classes: int | None = None
    data_version: str = ""
    feature_dim: int | None = None  # None: any
    train_shards: int = 1
    validation_shards: int = 1  # each host writes ceil(validation_shards / hosts): Train deals them to its hosts
    validation_fraction: float = 0.15
    test_fraction: float = 0.15
    seed: int = 0
    missing: str = "error"
    chunk_rows: int = 100_000
    shuffle_memory_mb: float = 512.0
    baseline_rows: int = 10_000  # the data-quality baseline's sample, over all hosts (0: none)
    raw_rows: int = 50_000  # the raw-column baseline's sample of each of train and test, over all hosts (0: none)

    def __post_init__(self) -> None:
        if not -(2**63) <= self.seed < 2**63:
            raise PreprocessError(
                f"--seed (pipeline parameter SplitSeed) {self.seed} is outside a 64-bit integer's range "
                f"({-(2**63)} to {2**63 - 1}): pick a smaller seed"
            )

    def fractions(self) -> tuple[float, float, float]:
        """(train, validation, test) shares; PreprocessError unless each is in [0, 1) and a train share is left."""
        validation, test = self.validation_fraction, self.test_fraction
        if not (0 <= validation < 1 and 0 <= test < 1 and validation + test < 1):
            raise PreprocessError(
                f"--validation-fraction (pipeline parameter ValidationFraction) {validation} and --test-fraction "
                f"(pipeline parameter TestFraction) {test} must be in [0, 1) and leave a train share"
            )
        return (1.0 - validation - test, validation, test)

    @property
    def shuffle_memory_bytes(self) -> int:
        return max(1, int(self.shuffle_memory_mb * 1024 * 1024))


def split_list(text: str | None) -> tuple[str, ...]:
    """A comma-separated argument as its items, blanks dropped (``--param X=`` passes an empty one)."""
    return tuple(item.strip() for item in text.split(",") if item.strip()) if text else ()
