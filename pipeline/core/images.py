"""The processing images the pipeline runs its own code in, as environments: Python version and library pins.

One table, read by the definition (which image version to name), the local backend (which interpreter and libraries
to run a processing job with) and the tests (what the container code must work with).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessingImage:
    """A SageMaker processing image: the framework's ECR repository and tag, its Python and its library pins."""

    framework: str  # the SDK's image_uris framework name
    version: str  # the image version the SDK is asked for, and the tag's prefix
    repository: str  # the ECR repository name in the image URI
    python: str  # major.minor
    pins: tuple[tuple[str, str], ...]  # (distribution, exact version) of what the job code imports and needs
    environment: tuple[tuple[str, str], ...]  # variables the image sets (its Dockerfile's ENV)

    @property
    def key(self) -> str:
        """A short name for caches and messages: ``sklearn-1.2-1``."""
        return f"{self.framework}-{self.version}"

    @property
    def requirements(self) -> list[str]:
        """The pins as pip requirement lines."""
        return [f"{name}=={version}" for name, version in self.pins]

    def matches(self, image_uri: str) -> bool:
        """True when ``image_uri`` (``<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>``) is this image."""
        path = image_uri.rsplit("/", 1)[-1]
        repository, _, tag = path.partition(":")
        return repository == self.repository and (tag == self.version or tag.startswith(self.version + "-"))


# Source: github.com/aws/sagemaker-scikit-learn-container, branch 1.2-1. docker/1.2-1/base/Dockerfile.cpu sets
# PYTHON_VERSION=3.9 and PYARROW_VERSION=14.0.1 (conda) and pip-installs scikit-learn==1.2.1; requirements.txt pins
# numpy==1.24.1, pandas==1.1.3, scipy==1.8.0, python-dateutil==2.8.1 (pandas' dependency) and six==1.15.0 (dateutil's).
# The image does not pin pytz, joblib or threadpoolctl (pandas' and scikit-learn's other dependencies): pip resolves
# them. The same requirements.txt pins boto3==1.28.57 with botocore>=1.31.57,<1.32.0 and urllib3==1.26.17: Evaluate
# looks up the champion with boto3 (botocore pinned to its lowest allowed version, the one boto3 1.28.57 was released
# with). The ENV line of the base Dockerfile gives the environment variables.
SKLEARN_1_2_1 = ProcessingImage(
    framework="sklearn",
    version="1.2-1",
    repository="sagemaker-scikit-learn",
    python="3.9",
    pins=(
        ("numpy", "1.24.1"),
        ("pandas", "1.1.3"),
        ("scipy", "1.8.0"),
        ("scikit-learn", "1.2.1"),
        ("pyarrow", "14.0.1"),
        ("python-dateutil", "2.8.1"),
        ("six", "1.15.0"),
        ("boto3", "1.28.57"),
        ("botocore", "1.31.57"),
        ("urllib3", "1.26.17"),
    ),
    environment=(
        ("PYTHONDONTWRITEBYTECODE", "1"),
        ("PYTHONUNBUFFERED", "1"),
        ("PYTHONIOENCODING", "UTF-8"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "C.UTF-8"),
    ),
)

PROCESSING_IMAGES: tuple[ProcessingImage, ...] = (SKLEARN_1_2_1,)

# The built-in Linear Learner algorithm: the SDK's image_uris framework name, which is also its ECR repository name.
LINEAR_LEARNER = "linear-learner"
DEFAULT_PROCESSING_IMAGE = SKLEARN_1_2_1


def image_for_uri(image_uri: str) -> ProcessingImage | None:
    """The table's entry for an image URI, or None for an image the table does not know."""
    return next((image for image in PROCESSING_IMAGES if image.matches(image_uri)), None)


def is_linear_learner(image_uri: str) -> bool:
    """True for the built-in Linear Learner's image (``<account>.dkr.ecr.<region>.amazonaws.com/linear-learner:1``),
    the only training image the local backend runs."""
    return LINEAR_LEARNER in image_uri


def image_for_version(framework: str, version: str) -> ProcessingImage | None:
    """The table's entry for a framework and image version, or None."""
    return next(
        (image for image in PROCESSING_IMAGES if (image.framework, image.version) == (framework, version)), None
    )
