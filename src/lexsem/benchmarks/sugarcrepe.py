"""SugarCrepe (Hsieh et al., "SugarCrepe: Fixing Hackable Benchmarks for Vision-Language
Compositionality", NeurIPS 2023): an image, its true caption and one hard negative, 7 subsets;
reported per subset, micro, and as the REPLACE / SWAP / ADD means (§4, Table 2)."""

from __future__ import annotations

from lexsem.benchmarks.base import Aggregate, Benchmark
from lexsem.benchmarks.formats import load_sugarcrepe_json
from lexsem.benchmarks.sources.files import file_loader, file_subset
from lexsem.tasks.pair import SUGARCREPE_GROUPS

URL = "https://raw.githubusercontent.com/RAIVNLab/sugar-crepe/0047054b243992f0fad63d6f64f7544862daf846/data"
SHA256 = {
    "add_att": "012d88d729693d193760e6f3393b06a1cf874380a9db0062e937201199fe044d",
    "add_obj": "1b9d76b93139a937b8dc1ada92a4f05ecc821bb3c291d752428bafadd4bb0682",
    "replace_att": "9fe55fd4c0a9ad1f85d486d9f6d0215b41f867eb025026e7f7b5ce44352545ee",
    "replace_obj": "9d299600639947e9d15281a9ded1382b376cf4ea088a8d08a1314bfe76e81898",
    "replace_rel": "356bcc2fc4c6aed3f4d9fd50acc58489bb1fe70c28791f9368d4cbf9ea39cdc9",
    "swap_att": "7a7ce04e5c4c80412b48c6f0c1347fb1a2f5d54c0be6aa429b64d390e442f8d0",
    "swap_obj": "073cdb8e253d053614e80710834d9773b09dbc1dd0a412f6f9492262caa1dcad",
}
# rows in the public file, and the paper's count where it differs
COUNTS = {
    "add_att": (692, None),
    "add_obj": (2062, None),
    "replace_att": (788, None),
    "replace_obj": (1652, None),
    "replace_rel": (1406, None),
    "swap_att": (666, None),
    "swap_obj": (245, 246),
}
GROUP_AGGREGATES = tuple(
    Aggregate(name, members, "macro", f"{name.upper()}: mean of the {', '.join(members)} subsets")
    for name, members in SUGARCREPE_GROUPS.items()
)

BENCHMARK = Benchmark(
    name="sugarcrepe",
    description="SugarCrepe: image + true caption + hard negative (pairs), 7 subsets",
    item_kind="pair",
    subsets=tuple(
        file_subset(name, "sugarcrepe", URL, f"{name}.json", SHA256[name], n, paper)
        for name, (n, paper) in COUNTS.items()
    ),
    loader=file_loader(load_sugarcrepe_json),
    text_tasks=(),
    image_tasks=("pair",),
    aggregates=GROUP_AGGREGATES,
    paper="Hsieh et al., SugarCrepe, NeurIPS 2023",
    images="COCO val2017",
    decode="open_clip_raw",
)
