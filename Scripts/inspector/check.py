#!/usr/bin/env python3
"""The inspector in a real browser: headless Chromium, driven by Selenium, against the
statekit-inspector-fixture program.

Checks that the page lists the program's containers, shows a write within a second with its
origin, shows a change made by another process to a key shared across processes as external,
that pressing "Undo" on the page restores the value in the program, that a request without the
token gets 403, and that the page keeps working while the program writes 10,000 times a second.
Stops every process it starts. Prints `inspector: N passed, M failed`; exits non-zero on failure.

Usage: Scripts/inspector/check.py [path to statekit-inspector-fixture]
       (default: .build/debug/statekit-inspector-fixture, built by `swift build`)
"""
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

# Selenium Manager stays offline and sends no usage statistics: the browser and its driver are
# Debian's, found on PATH, and this check reaches nothing but 127.0.0.1.
os.environ.setdefault("SE_OFFLINE", "true")
os.environ.setdefault("SE_AVOID_STATS", "true")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

FIXTURE = sys.argv[1] if len(sys.argv) > 1 else ".build/debug/statekit-inspector-fixture"
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(("PASS " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception:  # the page may be re-rendering the element
            pass
        time.sleep(0.02)
    return None


class Fixture:
    """The program under inspection, with its standard output read on a thread of its own."""

    def __init__(self, directory):
        self.process = subprocess.Popen(
            [FIXTURE, "--dir", directory], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def send(self, command):
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def expect(self, prefix, seconds):
        """The first line starting with `prefix` within `seconds`, or None."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if line.startswith(prefix):
                return line
        return None

    def stop(self):
        if self.process.poll() is None:
            try:
                self.send("quit")
                self.process.wait(timeout=5)
            except Exception:
                self.process.kill()
                self.process.wait()


def row_text(driver, key, column):
    return driver.find_element(By.CSS_SELECTOR, f'#containers tr[data-key="{key}"] td.{column}').text


def main():
    directory = tempfile.mkdtemp(prefix="statekit-inspector-")
    fixture = Fixture(directory)
    driver = None
    try:
        url_line = fixture.expect("URL ", 60)
        if not url_line:
            check("the fixture prints its URL", False, "no URL within 60 s")
            return
        url = url_line.split(" ", 1)[1]
        base = url.split("/?")[0]

        options = webdriver.ChromeOptions()
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"]:
            options.add_argument(argument)
        chromium = shutil.which("chromium")
        if chromium:
            options.binary_location = chromium
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        driver.set_page_load_timeout(15)
        driver.get(url)

        keys = wait_for(lambda: {"count", "profile", "title", "note"} <= {
            row.get_attribute("data-key") for row in driver.find_elements(By.CSS_SELECTOR, "#containers tbody tr")}, 5)
        check("the page lists the program's containers", bool(keys))
        wait_for(lambda: driver.find_element(By.ID, "status").text == "live", 5)

        started = time.monotonic()
        fixture.send("title Hello from the check")
        shown = wait_for(lambda: "Hello from the check" in row_text(driver, "title", "value"), 1.0)
        elapsed = time.monotonic() - started
        origin = wait_for(lambda: driver.find_element(
            By.CSS_SELECTOR, '#log tr.change[data-key="title"]').get_attribute("data-origin"), 1.0)
        check("a write shows within 1 s, with its origin",
              bool(shown) and origin == "local", f"shown={bool(shown)} after {elapsed:.2f} s, origin={origin}")

        writer = subprocess.run(
            [FIXTURE, "--dir", directory, "--write-shared", "from another process"], timeout=30)
        external = wait_for(lambda: [row for row in driver.find_elements(
            By.CSS_SELECTOR, '#log tr.change[data-key="note"]') if row.get_attribute("data-origin") == "external"], 3)
        check("another process's change to a shared key shows as external",
              writer.returncode == 0 and bool(external), f"writer exited {writer.returncode}")

        undo = wait_for(lambda: next(button for button in driver.find_elements(
            By.CSS_SELECTOR, ".history button") if button.text == "Undo" and button.is_enabled()), 3)
        if undo:
            undo.click()
        restored = fixture.expect("title=Draft", 3)
        check('pressing "Undo" restores the value in the program', bool(undo) and bool(restored),
              f"undo button={bool(undo)}, program said={restored}")

        try:
            status = urllib.request.urlopen(base + "/api/state", timeout=5).status
        except urllib.error.HTTPError as error:
            status = error.code
        check("a request without the token gets 403", status == 403, f"got {status}")

        fixture.send("storm 3")
        time.sleep(1.5)
        during = wait_for(lambda: int(row_text(driver, "count", "version")), 1)
        time.sleep(0.5)
        later = wait_for(lambda: int(row_text(driver, "count", "version")), 1)
        stormed = fixture.expect("stormed", 10)
        writes = int(stormed.split()[1]) if stormed else 0
        final = wait_for(lambda: int(row_text(driver, "count", "version")) >= writes, 3)
        fixture.send("count")
        after = wait_for(lambda: int(row_text(driver, "count", "version")) >= writes + 1, 2)
        check("the page keeps updating while the program writes 10,000 times a second",
              bool(during) and bool(later) and later > during and writes >= 20_000 and bool(final) and bool(after),
              f"versions during the storm {during} then {later}, {writes} writes, caught up={bool(final)}, "
              f"after={bool(after)}")
    finally:
        if driver:
            driver.quit()
        fixture.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # a crash of the check is a failure, not a pass
        check("the check ran to its end", False, repr(error))
    passed = sum(results)
    failed = len(results) - passed
    print(f"inspector: {passed} passed, {failed} failed")
    sys.exit(1 if failed or not results else 0)
