"""Drives the operator dashboard in a real, headless Chromium (the system's, through selenium).

    python browser_e2e.py BASE_URL OPS_TOKEN PLAIN_TOKEN UNSAFE_TASK SECOND_TASK SHOTS_DIR NAME

Two tasks are in flight when it starts. It signs in with a token that is not an operator's (and
is refused), then with an operator's; sees both leases; requeues the first as operator_accepted
(accepting the duplicate-risk confirmation), sees it back in the queue and its audit row; forces
an error on the second and sees the sender's pending result; checks that a POST without the CSRF
token is refused and that the overview refreshes by itself; signs out. Screenshots of the
overview and of the stale-lease page go to SHOTS_DIR. Exits non-zero at the first broken
expectation.
"""

import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait


def check(ok, what):
    if not ok:
        raise AssertionError(what)
    print(f"ok: {what}")


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(arg)
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=options)


def sign_in(d, base, token):
    d.get(f"{base}/dashboard")
    check(d.current_url.endswith("/dashboard/login"), "an anonymous visit is sent to the sign-in page")
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.CSS_SELECTOR, "form.login button").click()
    # The answer is another page (the overview, or a refusal): wait until it has replaced this one.
    WebDriverWait(d, 15).until(lambda drv: not drv.title.startswith("Sign in"))


def text(d, css):
    return d.find_element(By.CSS_SELECTOR, css).text


def row(d, task):
    return d.find_element(By.CSS_SELECTOR, f'#leases tr[data-task="{task}"]')


def main(base, ops, plain, first, second, shots, name):
    d = browser()
    wait = WebDriverWait(d, 15)
    try:
        sign_in(d, base, plain)
        check("cannot open the dashboard" in d.page_source, "a token without a2a.operator is refused")
        d.find_element(By.CSS_SELECTOR, "form button").click()
        wait.until(lambda drv: drv.title.startswith("Sign in"))

        sign_in(d, base, ops)
        wait.until(EC.text_to_be_present_in_element((By.ID, "count-in-flight"), "2"))
        check(True, "the overview shows the two tasks in flight")
        cookie = d.get_cookie("a2a_dashboard")
        check(cookie["httpOnly"] and cookie["sameSite"] == "Strict", f"the session cookie is HttpOnly, SameSite=Strict")
        d.save_screenshot(os.path.join(shots, f"dashboard-overview-{name}.png"))

        d.get(f"{base}/dashboard/leases")
        check(row(d, first) and row(d, second), "the stale-lease page lists both leases")
        d.save_screenshot(os.path.join(shots, f"dashboard-leases-{name}.png"))

        # Requeue the unsafe one as operator_accepted: the page asks first, stating the risk.
        r = row(d, first)
        Select(r.find_element(By.NAME, "duplicate_risk")).select_by_value("operator_accepted")
        r.find_element(By.CSS_SELECTOR, 'button[value="requeue"]').click()
        alert = wait.until(EC.alert_is_present())
        check("not declared idempotent" in alert.text, "the confirmation states the duplicate risk")
        alert.accept()
        wait.until(EC.presence_of_element_located((By.ID, "outcomes")))
        check("requeued" in text(d, f'#outcomes tr[data-task="{first}"]'), "the requeue succeeded")
        d.get(f"{base}/dashboard/tasks/{first}")
        check(text(d, "#state") == "queued", "the task is back in the queue")
        d.get(f"{base}/dashboard/audit?kind=a2a_repair_applied")
        check(first in text(d, "#audit") and "operator_accepted" in text(d, "#audit"),
              "its audit row is in the feed")

        # Force an error on the other: its sender has a result to drain.
        d.get(f"{base}/dashboard/leases")
        r = row(d, second)
        r.find_element(By.NAME, "message").send_keys("gave up: the worker is gone")
        r.find_element(By.CSS_SELECTOR, 'button[value="force_error"]').click()
        wait.until(EC.presence_of_element_located((By.ID, "outcomes")))
        check("error forced" in text(d, f'#outcomes tr[data-task="{second}"]'), "the error was forced")
        d.get(f"{base}/dashboard/tasks/{second}")
        check(text(d, "#state") == "result_pending", "the sender's result is pending")
        check("gave up" in text(d, "#result"), "with the error message")

        # A POST without the CSRF token changes nothing.
        status = d.execute_async_script(
            """const done = arguments[arguments.length - 1];
               fetch('/dashboard/leases/act', {method: 'POST',
                 headers: {'Content-Type': 'application/x-www-form-urlencoded'},
                 body: 'action=cancel&task=' + arguments[0] + ':'}).then(r => done(r.status));""",
            first,
        )
        check(status == 403, f"a POST without the CSRF token is refused ({status})")
        d.get(f"{base}/dashboard/tasks/{first}")
        check(text(d, "#state") == "queued", "... and changed nothing")

        # The overview refreshes itself.
        d.get(f"{base}/dashboard")
        wait.until(lambda drv: drv.find_element(By.ID, "live").get_attribute("data-refreshed"))
        check(text(d, "#count-result-pending") == "1", "the live overview shows the pending result")

        d.find_element(By.CSS_SELECTOR, "form.signout button").click()
        wait.until(lambda drv: drv.title.startswith("Sign in"))
        check(d.current_url.endswith("/dashboard/login"), "signing out returns to the sign-in page")
        check(d.get_cookie("a2a_dashboard") is None, "and forgets the token")
        print(f"dashboard in Chromium ({name}): passed")
    finally:
        d.quit()


if __name__ == "__main__":
    main(*sys.argv[1:8])
