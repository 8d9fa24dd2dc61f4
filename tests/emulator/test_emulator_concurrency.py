from __future__ import annotations

import threading

import requests
from emuhelpers import Api


def test_64_concurrent_clients_on_both_listeners(seeded):
    """64 keep-alive clients at once: nothing refused, every answer complete."""
    emu, project = seeded
    url = Api(emu).url_for(emu.resolve(project, "big.bin"))
    failures, barrier = [], threading.Barrier(64)

    def client(index):
        api = Api(emu)
        data = requests.Session()
        barrier.wait()
        for round_ in range(5):
            if api.get("/repo/v1/userProfile").status_code != 200:
                failures.append(("api", index, round_))
            start = (index * 5 + round_) * 4096
            answer = data.get(url, headers={"Range": f"bytes={start}-{start + 4095}"})
            if answer.status_code != 206 or len(answer.content) != 4096:
                failures.append(("data", index, round_, answer.status_code))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    stats = emu.stats()
    assert stats["data_by_status"].get("206") == 320 and stats["api_by_status"].get("200", 0) >= 320
