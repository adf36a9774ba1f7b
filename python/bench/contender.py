"""One contender of the Python benchmark (peers.py), run in its own virtual environment:
`python contender.py NAME BASE_URL CALLS WARMUP` prints one JSON line with the import time, the
wall time of every call and the process CPU per call. NAME: geode, instructor, pydantic-ai.

Every contender asks the same loopback fake (Chat Completions, answers at once) for the same
Decision, through the sync API its users write first, and checks the value it gets back."""

import json
import sys
import time

NAME, BASE_URL, CALLS, WARMUP = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
PROMPT = "The tests pass, the diff is small and reviewed. Decide whether to merge."
KEY = "sk-bench-not-a-secret"

t0 = time.perf_counter()
if NAME == "geode":
    import geode
    from pydantic import BaseModel, Field
elif NAME == "instructor":
    import instructor
    import openai
    from pydantic import BaseModel, Field
elif NAME == "pydantic-ai":
    from pydantic import BaseModel, Field
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
else:
    sys.exit(f"unknown contender {NAME}")
import_s = time.perf_counter() - t0

from typing import Literal  # noqa: E402


class Decision(BaseModel):
    """A merge decision."""

    verdict: Literal["merge", "hold", "reject"]
    reason: str
    risk: int = Field(ge=0, le=10)


if NAME == "geode":
    client = geode.Client(
        "openai-compatible",
        model="bench-model",
        env={"GEODE_OPENAI_COMPAT_BASE_URL": BASE_URL + "/v1", "GEODE_OPENAI_COMPAT_API_KEY": KEY},
    )

    def call():
        return client.extract(Decision, PROMPT).value

elif NAME == "instructor":
    client = instructor.from_openai(
        openai.OpenAI(base_url=BASE_URL + "/v1", api_key=KEY), mode=instructor.Mode.JSON_SCHEMA
    )

    def call():
        return client.chat.completions.create(
            model="bench-model",
            response_model=Decision,
            messages=[{"role": "user", "content": PROMPT}],
        )

else:
    model = OpenAIChatModel(
        "bench-model", provider=OpenAIProvider(base_url=BASE_URL + "/v1", api_key=KEY)
    )
    agent = Agent(model, output_type=NativeOutput(Decision))

    def call():
        return agent.run_sync(PROMPT).output


for _ in range(WARMUP):
    assert isinstance(call(), Decision)
walls = []
cpu0 = time.process_time()
for _ in range(CALLS):
    start = time.perf_counter()
    value = call()
    walls.append(time.perf_counter() - start)
    assert isinstance(value, Decision), value
cpu = time.process_time() - cpu0
print(json.dumps({"name": NAME, "import_s": import_s, "walls_s": walls, "cpu_per_call_s": cpu / CALLS}))
