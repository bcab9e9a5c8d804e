# relviz — two set-up commands: `make demo` and `make test`. Each creates .venv when missing and
# installs what it needs. torch==2.13.0 is installed FIRST: any other torch requirement makes pip
# download a multi-GB CUDA build on the project machines.

VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip -q --disable-pip-version-check
OUT    ?= demo-out
EPS    ?= 1
DELTA  ?= 1e-6

.PHONY: demo test test-fast lab install install-test system-test-deps clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install torch==2.13.0
	$(PIP) install -e .
	touch $@

install: $(VENV)/.installed

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -e ".[test]"
	touch $@

install-test: $(VENV)/.installed-test system-test-deps

# Headless browser tests need Debian's chromium (Playwright drives /usr/bin/chromium; it never
# downloads a browser). Installed with apt when missing (as root, or through sudo).
system-test-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  echo "installing chromium (apt)"; \
	  if [ "$$(id -u)" = "0" ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

demo: $(VENV)/.installed
	$(VENV)/bin/relviz synth --dataset nycflights13 --epsilon $(EPS) --delta $(DELTA) --out $(OUT) --seed 0
	$(PY) -m relviz.demo_checks $(OUT)

test: install-test
	$(PY) -m pytest -q

test-fast: install-test
	$(PY) -m pytest -q -m "not ui and not slow"

lab: install-test
	$(VENV)/bin/jupyter lab notebooks/

clean:
	rm -rf $(OUT) .pytest_cache
