"""Drives the operator dashboard in a real, headless Chromium (the system's, through selenium).

    python browser_e2e.py BASE_URL OPS_TOKEN PLAIN_TOKEN UNSAFE_TASK SECOND_TASK THIRD_TASK SHOTS_DIR NAME

Three tasks, none declared idempotent, are in flight when it starts. It signs in with a token
that is not an operator's (and is refused), then with an operator's; sees the three leases;
requeues the first as operator_accepted (the only posture offered; it accepts the confirmation
that states the risk), sees it back in the queue and its audit row; presses Enter in the second's
requeue reason and error-message boxes (nothing is submitted: Enter never submits a repair), then
forces its error with the button and sees the sender's pending result; presses Enter in the bulk
form's message box (nothing is submitted); requeues the third from the bulk form as idempotent (the confirmation
states the count and the posture) and sees it skipped and still in flight; checks that a POST
without the CSRF token is refused and that the overview refreshes by itself; signs out.
Screenshots of the overview and of the stale-lease page go to SHOTS_DIR. Exits non-zero at the
first broken expectation.
"""

import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
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
    check("/dashboard/login" in d.current_url, "an anonymous visit is sent to the sign-in page")
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.CSS_SELECTOR, "form.login button").click()
    # The answer is another page (the overview, or a refusal): wait until it has replaced this one.
    WebDriverWait(d, 15).until(lambda drv: not drv.title.startswith("Sign in"))


def settle(d):
    """Gives a submission that should not happen the time to happen: no alert, same page."""
    time.sleep(0.5)
    try:
        alert = d.switch_to.alert
    except NoAlertPresentException:
        return
    says = alert.text
    alert.dismiss()
    raise AssertionError(f"an unexpected confirmation: {says}")


def text(d, css):
    return d.find_element(By.CSS_SELECTOR, css).text


def row(d, task):
    return d.find_element(By.CSS_SELECTOR, f'#leases tr[data-task="{task}"]')


def open_row(d, task):
    """A row with its own actions unfolded (they are folded behind "Act")."""
    r = row(d, task)
    r.find_element(By.TAG_NAME, "summary").click()
    return r


def main(base, ops, plain, first, second, third, shots, name):
    d = browser()
    wait = WebDriverWait(d, 15)
    try:
        sign_in(d, base, plain)
        check("cannot open the dashboard" in d.page_source, "a token without a2a.operator is refused")
        d.find_element(By.CSS_SELECTOR, "form button").click()
        wait.until(lambda drv: drv.title.startswith("Sign in"))

        sign_in(d, base, ops)
        wait.until(EC.text_to_be_present_in_element((By.ID, "count-in-flight"), "3"))
        check(True, "the overview shows the three tasks in flight")
        cookie = d.get_cookie("a2a_dashboard")
        check(cookie["httpOnly"] and cookie["sameSite"] == "Strict", f"the session cookie is HttpOnly, SameSite=Strict")
        d.save_screenshot(os.path.join(shots, f"dashboard-overview-{name}.png"))

        d.get(f"{base}/dashboard/leases")
        check(row(d, first) and row(d, second) and row(d, third), "the stale-lease page lists the three leases")
        d.save_screenshot(os.path.join(shots, f"dashboard-leases-{name}.png"))

        # Requeue the unsafe one as operator_accepted: the page asks first, stating the risk.
        r = open_row(d, first)
        postures = [o.get_attribute("value") for o in Select(r.find_element(By.NAME, "duplicate_risk")).options]
        check(postures == ["operator_accepted"], f"a task not declared idempotent offers operator_accepted only ({postures})")
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

        # Enter in a text field of a row never submits a repair: not in its requeue reason, not
        # in its error message. The Force error button forces the error, never a requeue.
        d.get(f"{base}/dashboard/leases")
        r = open_row(d, second)
        r.find_element(By.CSS_SELECTOR, "input[name=reason][form$=requeue]").send_keys("drained" + Keys.ENTER)
        settle(d)
        check(not d.find_elements(By.ID, "outcomes") and row(d, second),
              "Enter in a row's requeue reason submits nothing")
        box = r.find_element(By.NAME, "message")
        box.send_keys("gave up: the worker is gone" + Keys.ENTER)
        settle(d)
        check(not d.find_elements(By.ID, "outcomes") and row(d, second),
              "Enter in a row's error-message box submits nothing")
        r.find_element(By.CSS_SELECTOR, 'button[value="force_error"]').click()
        wait.until(EC.presence_of_element_located((By.ID, "outcomes")))
        check("error forced" in text(d, f'#outcomes tr[data-task="{second}"]'),
              "the Force error button forced the error, with no requeue")
        d.get(f"{base}/dashboard/tasks/{second}")
        check(text(d, "#state").split()[0] == "result_pending", "the sender's result is pending")
        check(text(d, "#state").split()[1:] == ["error"], "... an error answer, shown as one")
        check("gave up" in text(d, "#result"), "with the error message")

        # Enter in a box of the bulk form submits nothing (its default button is disabled).
        d.get(f"{base}/dashboard/leases")
        d.find_element(By.ID, "bulk-message").send_keys("x" + Keys.ENTER)
        settle(d)
        check(not d.find_elements(By.ID, "outcomes") and row(d, third),
              "Enter in the bulk form's message box submits nothing")

        # The bar's buttons that would be refused are disabled: nothing selected, no message.
        for b in ("Requeue selected", "Cancel selected", "Force error on selected"):
            check(not d.find_element(By.XPATH, f'//button[text()="{b}"]').is_enabled(),
                  f"{b} is disabled while nothing is selected")
        d.find_element(By.ID, "bulk-message").clear()
        check(not d.find_element(By.XPATH, '//button[starts-with(text(), "Force error on all")]').is_enabled(),
              "forcing an error on every row is disabled without a message")
        # "Requeue all" names the posture in its sentence, not the menu's label.
        d.find_element(By.XPATH, '//button[starts-with(text(), "Requeue all")]').click()
        alert = wait.until(EC.alert_is_present())
        says = alert.text
        alert.dismiss()
        check("shown as operator_accepted?" in says and "I accept" not in says,
              f"the confirmation of Requeue all reads as a sentence ({says})")

        # The bulk requeue states its posture; as idempotent it skips a task not declared so.
        row(d, third).find_element(By.CSS_SELECTOR, 'input[type=checkbox][name="task"]').click()
        Select(d.find_element(By.ID, "bulk-posture")).select_by_value("idempotent")
        d.find_element(By.XPATH, '//button[text()="Requeue selected"]').click()
        alert = wait.until(EC.alert_is_present())
        says = alert.text
        check("1 selected" in says and "as idempotent" in says, f"the confirmation states the count and posture ({says})")
        alert.accept()
        wait.until(EC.presence_of_element_located((By.ID, "outcomes")))
        outcome = text(d, f'#outcomes tr[data-task="{third}"]')
        check("skipped" in outcome and "not declared idempotent" in outcome,
              f"a task not declared idempotent is skipped, not requeued ({outcome})")
        d.get(f"{base}/dashboard/tasks/{third}")
        check(text(d, "#state") == "in_flight", "... and left in flight")

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
    main(*sys.argv[1:9])
