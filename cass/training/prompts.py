"""The two training tasks in the released CASS models' prompt formats, as chat messages.

* ``source``: "Convert the following CUDA code to AMD GPU code:" with the CUDA code in a
  ```` ```cuda ```` fence; the answer is the HIP code in an ```` ```amd ```` fence.
* ``asm``: "Convert the following CUDA device assembly code to HIP device assembly:" with the
  SASS in a ```` ```cudaasm ```` fence; the answer is the AMD device assembly in ```` ```hipasm ````.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    """One translation task: its instruction and the fences of its prompt and answer."""

    name: str
    instruction: str
    prompt_fence: str
    answer_fence: str

    def prompt(self, text: str) -> str:
        return f"{self.instruction}\n```{self.prompt_fence}\n{text.rstrip()}\n```"

    def answer(self, text: str) -> str:
        return f"```{self.answer_fence}\n{text.rstrip()}\n```"

    def messages(self, prompt_text: str, answer_text: str) -> list[dict[str, str]]:
        """The chat messages of one example (user prompt, assistant answer)."""
        return [{"role": "user", "content": self.prompt(prompt_text)},
                {"role": "assistant", "content": self.answer(answer_text)}]


SOURCE = Task("source", "Convert the following CUDA code to AMD GPU code:", "cuda", "amd")
ASM = Task("asm", "Convert the following CUDA device assembly code to HIP device assembly:", "cudaasm", "hipasm")
TASKS = (SOURCE, ASM)
COUNT_COLUMNS = [f"{t.name}_{part}_tokens" for t in TASKS for part in ("prompt", "answer")]
"""Token-count columns: prompt and answer of every task."""
