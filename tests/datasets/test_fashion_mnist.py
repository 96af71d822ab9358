"""pearlstats.datasets.fashion_mnist: the IDX reader on hand-written files and on the real files."""

from __future__ import annotations

import gzip
import shutil
import struct
import subprocess

import numpy as np
import pytest

from pearlstats.datasets import FASHION_MNIST_CLASSES, fashion_mnist, read_idx, real
from pearlstats.exceptions import DataError, MissingDependencyError


def write_idx(path, array, compress=False):
    """Write an uint8 array as IDX by hand (independently of read_idx): magic, dims, bytes."""
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    payload = header + np.ascontiguousarray(array, dtype=np.uint8).tobytes()
    if compress:
        with gzip.open(str(path) + ".gz", "wb") as handle:
            handle.write(payload)
    else:
        path.write_bytes(payload)


def tiny_folder(folder, compress):
    rng = np.random.default_rng(0)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, size=(5, 3, 4)).astype(np.uint8),
        "train-labels-idx1-ubyte": np.array([9, 0, 3, 3, 7], dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, size=(2, 3, 4)).astype(np.uint8),
        "t10k-labels-idx1-ubyte": np.array([1, 8], dtype=np.uint8),
    }
    for name, array in arrays.items():
        write_idx(folder / name, array, compress=compress)
    return arrays


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_reads_tiny_idx_files_written_by_hand(tmp_path, compress):
    arrays = tiny_folder(tmp_path, compress)
    data = fashion_mnist(tmp_path)
    np.testing.assert_array_equal(data.train_images, arrays["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(data.test_images, arrays["t10k-images-idx3-ubyte"])
    assert data.train_labels.tolist() == [9, 0, 3, 3, 7] and data.train_labels.dtype == np.int64
    assert data.test_labels.tolist() == [1, 8]
    assert data.train_images.dtype == np.uint8 and data.source == tmp_path
    frame = data.frame("train")
    # pixel (row, col) of image i is column p{width*row + col}, scaled to [0, 1]
    assert frame.loc[2, "p6"] == arrays["train-images-idx3-ubyte"][2, 1, 2] / 255.0
    assert frame["label"].tolist() == [9, 0, 3, 3, 7] and frame.attrs["image_shape"] == (3, 4)


def test_read_idx_other_types_and_byte_order(tmp_path):
    values = np.array([[1.5, -2.0], [3.25, 1e6]])
    path = tmp_path / "floats.idx"
    header = bytes([0, 0, 0x0E, 2]) + struct.pack(">2I", 2, 2)
    path.write_bytes(header + struct.pack(">4d", *values.ravel()))
    np.testing.assert_array_equal(read_idx(path), values)


def test_malformed_files_name_the_problem(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x00\x01\x08\x01\x00\x00\x00\x02ab")
    with pytest.raises(DataError, match="not an IDX file"):
        read_idx(bad)
    short = tmp_path / "short"
    short.write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 5, 1, 2]))
    with pytest.raises(DataError, match=r"shape \(5,\).*holds 2 bytes"):
        read_idx(short)


def test_missing_file_and_mismatched_counts(tmp_path):
    arrays = tiny_folder(tmp_path, compress=False)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte.*apt-get install dataset-fashion-"):
        fashion_mnist(tmp_path)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.array([1, 2, 3], dtype=np.uint8))
    with pytest.raises(DataError, match="test images have shape"):
        fashion_mnist(tmp_path)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.array([1, 10], dtype=np.uint8))
    with pytest.raises(DataError, match="0..9"):
        fashion_mnist(tmp_path)
    with pytest.raises(DataError, match="not a folder"):
        fashion_mnist(tmp_path / "nowhere")
    assert len(arrays) == 4


def test_absent_debian_package_names_apt_get(monkeypatch):
    class Listing:
        returncode, stdout = 1, ""

    monkeypatch.setattr(real.shutil, "which", lambda name: "/usr/bin/dpkg")
    monkeypatch.setattr(real.subprocess, "run", lambda *args, **kwargs: Listing())
    with pytest.raises(MissingDependencyError, match="apt-get install dataset-fashion-mnist"):
        fashion_mnist()
    monkeypatch.setattr(real.shutil, "which", lambda name: None)
    with pytest.raises(MissingDependencyError, match="no dpkg; pass path="):
        fashion_mnist()


def _debian_package_installed() -> bool:
    if shutil.which("dpkg") is None:
        return False
    return subprocess.run(["dpkg", "-s", "dataset-fashion-mnist"], capture_output=True,
                          check=False).returncode == 0


@pytest.mark.skipif(not _debian_package_installed(),
                    reason="Debian package dataset-fashion-mnist is not installed "
                           "(apt-get install dataset-fashion-mnist)")
def test_real_files_shapes_and_label_counts():
    data = fashion_mnist()
    assert data.train_images.shape == (60000, 28, 28) and data.test_images.shape == (10000, 28, 28)
    # Fashion-MNIST is balanced: 6 000 training and 1 000 test images per class
    assert np.bincount(data.train_labels).tolist() == [6000] * 10
    assert np.bincount(data.test_labels).tolist() == [1000] * 10
    assert data.train_images.max() == 255 and data.train_images.min() == 0
    assert len(FASHION_MNIST_CLASSES) == 10 and FASHION_MNIST_CLASSES[9] == "Ankle boot"
    # the first training image is an ankle boot (label 9), as in Zalando's README
    assert data.train_labels[0] == 9
