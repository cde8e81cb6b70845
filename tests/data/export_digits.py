"""Exports scikit-learn's `digits` data set to digits.u8, the file the
fusegraph training example and its test read (no download at run time).

Layout of digits.u8: 1797 records of 65 bytes each; bytes 0..64 are the
8x8 image row-major with grey levels 0..16, byte 64 is the label 0..9.
The records keep scikit-learn's order.

Run: python3 tests/data/export_digits.py   (needs scikit-learn)
"""

import pathlib

import numpy as np
from sklearn.datasets import load_digits

digits = load_digits()
images = digits.data.astype(np.uint8)  # (1797, 64), values 0..16
labels = digits.target.astype(np.uint8)  # (1797,)
assert images.shape == (1797, 64) and images.max() <= 16
records = np.concatenate([images, labels[:, None]], axis=1)
out = pathlib.Path(__file__).with_name("digits.u8")
out.write_bytes(records.tobytes())
print(f"wrote {out} ({records.nbytes} bytes, {len(records)} records)")
