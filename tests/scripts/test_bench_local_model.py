"""The local-model bench reads the server's own speed from its log, as llama.cpp prints it for each completion."""

from scripts.bench_local_model import Timings

#: llama-cpp-python 0.3.36's server log around two completions (``verbose``: llama.cpp's perf lines, its prefix
#: cache), its padding shortened.
LOG = """\
INFO:     127.0.0.1:50412 - "POST /v1/chat/completions HTTP/1.1" 200 OK
llama_perf_context_print:        load time = 512.20 ms
llama_perf_context_print: prompt eval time = 9500.00 ms / 1900 tokens (5.00 ms per token,   200.00 tokens per second)
llama_perf_context_print:        eval time = 4000.00 ms / 40 runs   (100.00 ms per token,    10.00 tokens per second)
llama_perf_context_print:       total time = 13600.00 ms / 1940 tokens
llama_perf_context_print:    graphs reused = 38
Llama.generate: 1890 prefix-match hit, remaining 300 prompt tokens to eval
llama_perf_context_print:        load time = 512.20 ms
llama_perf_context_print: prompt eval time = 1500.00 ms / 300 tokens (5.00 ms per token,   200.00 tokens per second)
llama_perf_context_print:        eval time = 1000.00 ms / 20 runs   (50.00 ms per token,    20.00 tokens per second)
"""


def test_the_servers_own_timings_are_read_per_completion_and_make_its_speeds():
    timings = Timings.read(LOG)
    assert timings.prompts == [(9500.0, 1900), (1500.0, 300)]
    assert timings.generations == [(4000.0, 40), (1000.0, 20)]
    assert timings.prompt_tokens(0) == "1,900" and timings.prompt_tokens(1) == "300" and timings.prompt_tokens(2) == "-"
    assert Timings.rate(timings.prompts) == 200.0
    assert Timings.rate(timings.generations) == 12.0  # 60 tokens in 5 s of generation, not of the whole run
    assert Timings.rate([]) == 0.0
