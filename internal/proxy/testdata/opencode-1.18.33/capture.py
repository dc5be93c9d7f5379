import http.server, json, sys, time, os
n=[0]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header('Content-Type','application/json'); self.end_headers()
        self.wfile.write(b'{"object":"list","data":[{"id":"test-model","object":"model"}]}')
    def do_POST(self):
        l=int(self.headers.get('Content-Length',0)); b=self.rfile.read(l)
        n[0]+=1
        open(f'req{n[0]}.json','wb').write(b)
        j=json.loads(b)
        is_title = 'title' in json.dumps(j.get('messages',[])[:2]).lower()
        text = "Greeting Test" if is_title else "Hello there."
        self.send_response(200); self.send_header('Content-Type','text/event-stream'); self.end_headers()
        def ev(d): self.wfile.write(b'data: '+json.dumps(d).encode()+b'\n\n')
        base={"id":"c%d"%n[0],"object":"chat.completion.chunk","created":1,"model":"test-model"}
        ev({**base,"choices":[{"index":0,"delta":{"role":"assistant","content":text},"finish_reason":None}]})
        ev({**base,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}})
        self.wfile.write(b'data: [DONE]\n\n'); self.wfile.flush()
    def log_message(self,*a): pass
http.server.ThreadingHTTPServer(('127.0.0.1',int(sys.argv[1])),H).serve_forever()
