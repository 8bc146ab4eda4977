"""Write the files of the command-line SMS benchmark (docs/obfuscate.md, "Measured with the
command line"): train.csv (600 texts + labels), test.csv (the next 200) and public.txt (the
2,000 UCI sentiment sentences, the attackers' public text), from a seeded permutation.

    python benchmarks/obfuscation_sms_files.py OUT_FOLDER
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

TEXT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "text"


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "sms-benchmark")
    out.mkdir(parents=True, exist_ok=True)
    sms = pd.read_csv(
        TEXT / "sms_spam_collection.tsv", sep="\t", header=None, names=["label", "text"], quoting=3
    )
    order = np.random.default_rng(0).permutation(len(sms))
    sms.iloc[order[:600]][["text", "label"]].to_csv(out / "train.csv", index=False)
    sms.iloc[order[600:800]][["text", "label"]].to_csv(out / "test.csv", index=False)
    public = pd.concat(
        pd.read_csv(TEXT / name, sep="\t", header=None, names=["text", "label"], quoting=3)
        for name in ("uci_sentiment_amazon_cells_labelled.tsv", "uci_sentiment_yelp_labelled.tsv")
    )["text"]
    lines = (text.replace("\n", " ") for text in public)
    (out / "public.txt").write_text("\n".join(lines) + "\n")
    print(f"written {out}/train.csv, test.csv, public.txt")


if __name__ == "__main__":
    main()
