"""In-test servers of the OpenAI chat completions protocol, counting requests: :class:`ModelServer` really runs a
local model with transformers (greedy, or sampling with the request's temperature and top_p); :class:`ScriptedServer`
answers each request with a text a function of the request chooses. Their first ``fail_first`` requests get HTTP 500,
as an overloaded server would answer; a request whose user message contains ``refuse_marker`` gets HTTP 400, as a
server answers a prompt over its context."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class ChatServer:
    """The protocol; :meth:`answer` makes a reply's text."""

    def __init__(self, fail_first: int = 0, delay_s: float = 0.0, refuse_marker: str | None = None):
        self.fail_first, self.delay_s, self.refuse_marker = fail_first, delay_s, refuse_marker
        self.requests = 0
        self.answered = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, request: dict) -> tuple[str, int, int]:
        """(text, prompt tokens, completion tokens) for a request."""
        raise NotImplementedError

    def reply(self, request: dict) -> tuple[int, dict]:
        user = next((m["content"] for m in request.get("messages", []) if m["role"] == "user"), "")
        if self.refuse_marker and self.refuse_marker in user:
            return 400, {"error": {"message": "prompt too long", "type": "invalid_request_error"}}
        time.sleep(self.delay_s)
        text, prompt_tokens, completion_tokens = self.answer(request)
        with self.lock:
            self.answered += 1
        return 200, {"id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": int(time.time()),
                     "model": request["model"], "choices": [{"index": 0, "finish_reason": "stop",
                                                             "message": {"role": "assistant", "content": text}}],
                     "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                               "total_tokens": prompt_tokens + completion_tokens}}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests += 1
                    failing = server.requests <= server.fail_first
                if failing or self.path != "/v1/chat/completions":
                    status, payload = (500, {"error": {"message": "overloaded"}}) if failing else (
                        404, {"error": {"message": f"no route {self.path}"}})
                else:
                    status, payload = server.reply(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


class ModelServer(ChatServer):
    """Answers with a local model (one generation at a time)."""

    def __init__(self, model_dir: Path, **options):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        self.model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
        self.generating = threading.Lock()
        super().__init__(**options)

    def answer(self, request: dict) -> tuple[str, int, int]:
        ids = self.tokenizer.apply_chat_template(request["messages"], add_generation_prompt=True,
                                                 return_tensors="pt", return_dict=True)
        temperature = request.get("temperature", 1.0)
        options = {"do_sample": False} if temperature == 0 else {
            "do_sample": True, "temperature": temperature, "top_p": request.get("top_p", 1.0)}
        with self.generating, self.torch.no_grad():   # the model is shared
            if "seed" in request:
                self.torch.manual_seed(request["seed"])
            out = self.model.generate(**ids, max_new_tokens=request.get("max_tokens", 16),
                                      pad_token_id=self.tokenizer.pad_token_id, **options)
        new = out[0, ids["input_ids"].shape[1]:]
        return self.tokenizer.decode(new, skip_special_tokens=True), ids["input_ids"].shape[1], len(new)


class ScriptedServer(ChatServer):
    """Answers with ``script(request)``."""

    def __init__(self, script: Callable[[dict], str], **options):
        self.script = script
        super().__init__(**options)

    def answer(self, request: dict) -> tuple[str, int, int]:
        text = self.script(request)
        return text, sum(len(m["content"].split()) for m in request["messages"]), len(text.split())
