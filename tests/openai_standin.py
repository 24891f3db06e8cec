"""An in-test server of the OpenAI chat completions protocol that really runs a local model with transformers
(greedy, or sampling with the request's temperature and top_p), counting requests; its first ``fail_first``
requests get HTTP 500, as an overloaded server would answer."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class ChatServer:
    def __init__(self, model_dir: Path, fail_first: int = 0):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        self.model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
        self.fail_first = fail_first
        self.requests = 0
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

    def reply(self, request: dict) -> dict:
        ids = self.tokenizer.apply_chat_template(request["messages"], add_generation_prompt=True,
                                                 return_tensors="pt", return_dict=True)
        temperature = request.get("temperature", 1.0)
        options = {"do_sample": False} if temperature == 0 else {
            "do_sample": True, "temperature": temperature, "top_p": request.get("top_p", 1.0)}
        with self.lock, self.torch.no_grad():   # one generation at a time: the model is shared
            if "seed" in request:
                self.torch.manual_seed(request["seed"])
            out = self.model.generate(**ids, max_new_tokens=request.get("max_tokens", 16),
                                      pad_token_id=self.tokenizer.pad_token_id, **options)
        new = out[0, ids["input_ids"].shape[1]:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return {"id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": int(time.time()),
                "model": request["model"], "choices": [{"index": 0, "finish_reason": "stop",
                                                        "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": ids["input_ids"].shape[1], "completion_tokens": len(new),
                          "total_tokens": ids["input_ids"].shape[1] + len(new)}}

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
                    status, payload = 200, server.reply(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
