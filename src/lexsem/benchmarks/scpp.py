"""SugarCrepe++ (Dumpala et al., "SugarCrepe++ Dataset: Vision-Language Model Sensitivity to
Semantic and Lexical Alterations", NeurIPS 2024 Datasets & Benchmarks): an image, two
paraphrases P1, P2 and a lexically close negative N, 5 subsets (§3); ITT and TOT (§4); on
request (`--task yesno`) the yes/no answer per caption of App. G.1, Table 17."""

from __future__ import annotations

from lexsem.benchmarks.base import Benchmark
from lexsem.benchmarks.formats import load_scpp_json
from lexsem.benchmarks.sources.files import file_loader, file_subset

URL = "https://raw.githubusercontent.com/Sri-Harsha/scpp/c083bbf039a5ca215acaf25e7ee736d2ea6f3864/data"
SHA256 = {
    "swap_obj": "5f33cae824de431a7ecd3c5de6301f689815f9497aa36d96b154bbaf117b201b",
    "swap_att": "450d0fd9fcad3e6f44950dc634e7f901ab1c6d9c60a569ade5ae8ffb3d203ad8",
    "replace_obj": "5c6dc499ec8f511a8aa4ec1b7b5eb0eca90317488abe36ec39573355e2d361ab",
    "replace_att": "6826413592894754eeca02aeebbcbbc8b95a7456998abcc714e71c033ce6fe87",
    "replace_rel": "040fb95d3f0619bf515db60879e99709a87a5e9b4f524ec3403b127243480fd4",
}
COUNTS = {
    "swap_obj": 245,
    "swap_att": 666,
    "replace_obj": 1652,
    "replace_att": 788,
    "replace_rel": 1406,
}

BENCHMARK = Benchmark(
    name="sugarcrepe_pp",
    description="SugarCrepe++: image + two paraphrases + a lexically close negative, 5 subsets",
    item_kind="triplet",
    subsets=tuple(
        file_subset(name, "sugarcrepe_pp", URL, f"{name}.json", SHA256[name], n, n)
        for name, n in COUNTS.items()
    ),
    loader=file_loader(load_scpp_json),
    text_tasks=("tot",),
    image_tasks=("itt",),
    opt_in_tasks=("yesno",),  # Table 17's yes/no per caption, for generative VLMs
    paper="Dumpala et al., SugarCrepe++, NeurIPS 2024 Datasets & Benchmarks",
    images="COCO val2017",
    decode="open_clip_raw",
)
