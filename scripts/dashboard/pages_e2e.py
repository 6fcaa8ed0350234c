"""Reads every page of the operator dashboard as an operator would, in a real headless Chromium
(the system's, through selenium), at 1,400 and at 800 px, and takes a screenshot of each.

    python pages_e2e.py FIXTURES_JSON

FIXTURES_JSON names the server, the tokens and the tasks the test made (see
tests/dashboard/browser.rs). Exits non-zero at the first broken expectation.
"""

import json
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from browser_e2e import check, text

WIDE, NARROW = 1400, 800


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                f"--window-size={WIDE},1000", "--hide-scrollbars"):
        options.add_argument(arg)
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=options)


def width(d, px):
    """Makes the page's viewport `px` wide (the window's frame is added)."""
    d.set_window_size(px, 1000)
    inner = d.execute_script("return window.innerWidth")
    d.set_window_size(px + (px - inner), 1000)


def fits(d, what):
    """Nothing makes the page wider than the window."""
    wide, inner = d.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth]")
    check(wide <= inner + 1, f"{what}: the page fits its window ({wide} px in {inner} px)")


def visible(d, el, what):
    r = d.execute_script("const r = arguments[0].getBoundingClientRect();"
                         "return [r.left, r.right, r.top, r.bottom, window.innerWidth, window.innerHeight];", el)
    check(r[0] >= 0 and r[1] <= r[4] + 1 and r[2] >= 0 and r[3] <= r[5] + 1,
          f"{what} is on screen ({[round(x) for x in r]})")


def sign_in(d, base, token):
    d.get(f"{base}/dashboard/login")
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.CSS_SELECTOR, "form.login button").click()
    WebDriverWait(d, 15).until(lambda drv: not drv.title.startswith("Sign in"))


def shot(d, shots, name, px):
    """The whole page (up to 2,400 px tall) at the width it was read at."""
    tall = min(d.execute_script("return document.documentElement.scrollHeight"), 2400)
    inner = d.execute_script("return window.innerHeight")
    size = d.get_window_size()
    d.set_window_size(size["width"], size["height"] + max(0, tall - inner))
    d.save_screenshot(os.path.join(shots, f"{name}-{px}.png"))
    d.set_window_size(size["width"], size["height"])


def tab_to(d, css, what, limit=60):
    """Presses Tab until the element `css` has the focus; the number of presses."""
    target = d.find_element(By.CSS_SELECTOR, css)
    for presses in range(1, limit + 1):
        ActionChains(d).send_keys(Keys.TAB).perform()
        if d.switch_to.active_element == target:
            return presses
    raise AssertionError(f"{what}: not reached in {limit} Tab presses")


def sign_in_refusals(d, f):
    base = f["base"]
    d.get(f"{base}/dashboard/login")
    d.find_element(By.ID, "token").send_keys(f["expired"])
    d.find_element(By.CSS_SELECTOR, "form.login button").click()
    WebDriverWait(d, 15).until(lambda drv: "expired" in drv.page_source.lower())
    check("ExpiredSignature" not in d.page_source, "an expired token is refused in words, not an internal name")


def stale_leases(d, f, shots):
    base = f["base"]
    wait = WebDriverWait(d, 15)
    width(d, WIDE)
    d.get(f"{base}/dashboard/leases")
    rows = d.find_elements(By.CSS_SELECTOR, "#leases tr[data-task]")
    check(len(rows) == 100, f"a page lists 100 of the {f['leases']} leases ({len(rows)})")
    check(text(d, "#matched").startswith(f"{f['leases']} leases match"), "and says how many match")
    tallest = max(r.size["height"] for r in rows)
    check(tallest <= 40, f"a lease is one line ({tallest} px)")
    bar = d.find_element(By.ID, "bulkbar")
    visible(d, bar, "the bulk bar, with the page scrolled to its top")
    check(text(d, "#selected-count") == "0 selected", "the bar says nothing is selected")
    options = [o.text for o in d.find_elements(By.CSS_SELECTOR, "select[name=min_age_ms] option")]
    check("5 min" in options and "1 h" in options, f"the idle filter speaks minutes and hours ({options})")
    fits(d, "stale leases at 1,400 px")
    shot(d, shots, "leases", WIDE)

    # The next page holds the rest, none of them twice.
    first = {r.get_attribute("data-task") for r in rows}
    d.find_element(By.ID, "next-page").click()
    wait.until(EC.presence_of_element_located((By.ID, "first-page")))
    rest = {r.get_attribute("data-task") for r in d.find_elements(By.CSS_SELECTOR, "#leases tr[data-task]")}
    check(len(rest) == f["leases"] - 100 and not rest & first, f"the next page holds the other {len(rest)} leases")

    # A row's own action takes its own reason into its audit row.
    d.get(f"{base}/dashboard/leases?lessee=bob&sort=recent")
    task = f["row_reason_task"]
    r = d.find_element(By.CSS_SELECTOR, f'#leases tr[data-task="{task}"]')
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", r)
    r.find_element(By.TAG_NAME, "summary").click()
    error = r.find_element(By.CSS_SELECTOR, 'input[name=message]')
    error.send_keys("the worker's disk is full")
    reason = error.find_element(By.XPATH, "following-sibling::input[@name='reason']")
    reason.send_keys("disk full on worker 7")
    r.find_element(By.CSS_SELECTOR, 'button[value="force_error"]').click()
    wait.until(EC.presence_of_element_located((By.ID, "outcomes")))
    check("error forced" in text(d, f'#outcomes tr[data-task="{task}"]'), "the row's forced error ran")
    d.get(f"{base}/dashboard/audit?kind=a2a_repair_applied")
    check("disk full on worker 7" in text(d, "#audit"), "with the row's own reason in its audit row")

    # Filters: by lessee and by safety, in the address a person can read.
    d.get(f"{base}/dashboard/leases?lessee={f['lessee']}&safety=unsafe&sort=recent")
    rows = d.find_elements(By.CSS_SELECTOR, "#leases tr[data-task]")
    check(len(rows) == 3, f"the lessee filter keeps {f['lessee']}'s three leases ({len(rows)})")
    check([r.get_attribute("data-task") for r in rows] == list(reversed(f["keyboard"])),
          "most recently heard from first")

    # Keyboard only: select three rows with Space, give a reason, requeue them with Enter.
    d.get(f"{base}/dashboard/leases?lessee={f['lessee']}")
    presses = 0
    for task in f["keyboard"]:
        presses += tab_to(d, f'#leases tr[data-task="{task}"] input[type=checkbox]', f"row {task}")
        ActionChains(d).send_keys(Keys.SPACE).perform()
    check(text(d, "#selected-count") == "3 selected", "the bar counts the three rows selected")
    presses += tab_to(d, "#bulk-reason", "the bulk reason")
    ActionChains(d).send_keys("worker pool drained").perform()
    presses += tab_to(d, 'button[name=action][value=requeue]:not([form])', "Requeue selected")
    check(presses <= 30, f"three rows and the bulk action take {presses} Tab presses")
    ActionChains(d).send_keys(Keys.ENTER).perform()
    alert = wait.until(EC.alert_is_present())
    check("3 selected" in alert.text and "as operator_accepted?" in alert.text,
          f"the confirmation states the count and the posture ({alert.text})")
    alert.accept()
    wait.until(EC.presence_of_element_located((By.ID, "outcomes")))
    for task in f["keyboard"]:
        check("requeued" in text(d, f'#outcomes tr[data-task="{task}"]'), f"{task} requeued")
    # A refresh of the outcome runs nothing again (post/redirect/get): it says so.
    check(d.current_url.endswith("/dashboard/done"), "the outcome is a page of its own")
    d.refresh()
    wait.until(lambda drv: "Nothing more to show" in drv.title)
    check(not d.find_elements(By.ID, "outcomes"), "a refresh of the outcome runs nothing again")

    width(d, NARROW)
    d.get(f"{base}/dashboard/leases")
    fits(d, "stale leases at 800 px")
    for b in d.find_elements(By.CSS_SELECTOR, "#bulkbar button"):
        visible(d, b, f"the bulk button {b.text!r} at 800 px")
    row = d.find_elements(By.CSS_SELECTOR, "#leases tr[data-task]")[0]
    check(row.size["height"] <= 40, "a lease is one line at 800 px too")
    shot(d, shots, "leases", NARROW)


def overview(d, f):
    base = f["base"]
    wait = WebDriverWait(d, 15)
    width(d, WIDE)
    d.get(f"{base}/dashboard")
    for state in ("queued", "result_pending", "resolved"):
        check(d.find_elements(By.CSS_SELECTOR, f'#live a.card[href="/dashboard/tasks?state={state}"]'),
              f"the {state} card opens those tasks")
    # The throughput chart has an error line and states the error rate.
    check(d.find_elements(By.CSS_SELECTOR, "svg#throughput polyline.line[data-series=errors]"),
          "the throughput chart draws an error line")
    rate = text(d, "#error-rate")
    check("%" in rate, f"the legend states the error rate ({rate})")
    # Depth per recipient over time: kbd's three requeued tasks, linked to its queue.
    check(d.find_elements(By.CSS_SELECTOR, "svg#depth-chart"), "the deepest queues are charted")
    check(d.find_elements(By.CSS_SELECTOR, '.legend a[href="/dashboard/tasks?recipient=kbd&state=queued"]'),
          "the depth chart's legend opens kbd's queue")
    # Values on hover: the current minute of each chart names its numbers.
    for chart, says in (("throughput", "errors"), ("depth-chart", "kbd 3")):
        minute = d.find_elements(By.CSS_SELECTOR, f"svg#{chart} rect.minute")[-1]
        title = minute.find_element(By.TAG_NAME, "title").get_attribute("textContent")
        check("UTC" in title and says in title, f"{chart}: the current minute's values on hover ({title})")
        before = d.execute_script("return getComputedStyle(arguments[0]).fill", minute)
        ActionChains(d).move_to_element(minute).perform()
        after = d.execute_script("return getComputedStyle(arguments[0]).fill", minute)
        check(before != after, f"{chart}: the minute under the pointer is highlighted ({before} → {after})")
    # The youngest lease-age card opens exactly the leases it counts.
    card = d.find_element(By.CSS_SELECTOR, '#live a.card[href^="/dashboard/leases?max_age_ms="]')
    n = int(card.find_element(By.CSS_SELECTOR, ".n").text)
    check(n == f["in_flight"], f"the youngest lease-age card counts the {f['in_flight']} leases ({n})")
    card.click()
    wait.until(EC.presence_of_element_located((By.ID, "matched")))
    check(text(d, "#matched").startswith(f"{n} leases match"), f"... and opens those {n} leases ({text(d, '#matched')})")


def task_page(d, f):
    base = f["base"]
    width(d, WIDE)
    # A parent's children, tallied by state and by result status.
    d.get(f"{base}/dashboard/tasks/{f['queued']}")
    tally = text(d, "#tally")
    check("2 children" in tally and "1 queued" in tally and "1 error" in tally,
          f"the children's tally counts states and error answers ({tally})")
    for field in ("kind", "context", "safety", "deadline", "input"):
        check(d.find_elements(By.ID, field), f"the task page shows its {field}")
    # Its history: each attempt and how it ended, from the audit rows.
    d.get(f"{base}/dashboard/tasks/{f['timeline']}")
    ends = [(a.get_attribute("data-attempt"), a.find_element(By.CSS_SELECTOR, "p.end").get_attribute("data-end"),
             a.find_element(By.CSS_SELECTOR, "p.end").get_attribute("data-result"))
            for a in d.find_elements(By.CSS_SELECTOR, "#timeline li.attempt")]
    check(ends == [("1", "requeued", None), ("2", "answered", "error")],
          f"the timeline shows two attempts: requeued, then answered with an error ({ends})")
    check("worker host lost" in text(d, "#timeline"), "the requeue's reason is in the timeline")
    first = text(d, '#timeline li.attempt[data-attempt="1"] p.lease')
    check(first.startswith("Leased by frank"), f"an ended attempt says who held its lease ({first})")
    check(not d.find_elements(By.CSS_SELECTOR, "#task-audit pre:not(details pre)"),
          "the task's audit rows read as sentences, the raw row folded")
    # Who canceled a task, when and why.
    d.get(f"{base}/dashboard/tasks/{f['canceled']}")
    said = text(d, "#canceled")
    check("alice" in said and "customer withdrew" in said, f"the task page says who canceled it and why ({said})")
    # An in-flight task offers its repairs, each with a reason, and shows its last heartbeat.
    d.get(f"{base}/dashboard/tasks/{f['in_flight_task']}")
    check("last heartbeat" in d.page_source, "the task page shows the lease's last heartbeat")
    for form in ("repair-requeue", "repair-error"):
        check(d.find_elements(By.CSS_SELECTOR, f"#{form} input[name=reason]"), f"the task page offers {form} with a reason")


def audit(d, f):
    base = f["base"]
    wait = WebDriverWait(d, 15)
    width(d, WIDE)
    d.get(f"{base}/dashboard/audit")
    kinds = [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, "#audit-filters select[name=kind] option")]
    check("a2a_repair_applied" in kinds and "capability_check" in kinds, f"the kind is a menu ({len(kinds)} kinds)")
    check(d.find_elements(By.ID, "passing-hidden"), "passing capability checks are hidden, and the page says so")
    shown = d.find_elements(By.CSS_SELECTOR, '#audit td.what[data-kind="capability_check"]')
    check(shown and all("refused" in (c.get_attribute("class") or "") for c in shown),
          f"only refused capability checks show by default, and they do ({len(shown)})")
    links = d.find_elements(By.CSS_SELECTOR, "#audit a.task")
    check(links and links[0].get_attribute("href").startswith(f"{base}/dashboard/tasks/"), "task ids are links")
    check(not d.find_elements(By.CSS_SELECTOR, "#audit pre:not(details pre)"), "no raw JSON line on the page")
    d.find_element(By.CSS_SELECTOR, "#audit-filters input[name=passing]").click()
    d.find_element(By.CSS_SELECTOR, "#audit-filters button").click()
    wait.until(lambda drv: "passing=true" in drv.current_url)
    check(any("refused" not in (c.get_attribute("class") or "")
              for c in d.find_elements(By.CSS_SELECTOR, '#audit td.what[data-kind="capability_check"]')),
          "asked, the passing checks show")
    events = lambda: {c.get_attribute("data-event") for c in d.find_elements(By.CSS_SELECTOR, "#audit td.what")}
    newest = events()
    d.find_element(By.ID, "older").click()
    wait.until(EC.presence_of_element_located((By.ID, "newest")))
    older = events()
    check(older and not older & newest, f"older rows are a page of their own ({len(newest)} then {len(older)})")
    fits(d, "the audit page at 1,400 px")


def search(d, f, shots):
    base = f["base"]
    wait = WebDriverWait(d, 15)
    width(d, WIDE)
    d.get(f"{base}/dashboard/tasks?id={f['queued'][:8]}")
    rows = d.find_elements(By.CSS_SELECTOR, "#tasks tr[data-task]")
    check([r.get_attribute("data-task") for r in rows] == [f["queued"]], "an id prefix finds its task")
    # The filters by result status and creation time, from the form.
    d.get(f"{base}/dashboard/tasks")
    Select(d.find_element(By.NAME, "result")).select_by_value("error")
    Select(d.find_element(By.NAME, "created")).select_by_value("60")
    d.find_element(By.CSS_SELECTOR, "form.filters button").click()
    wait.until(lambda drv: "result=error" in drv.current_url)
    badges = [r.find_element(By.CSS_SELECTOR, ".result").text for r in d.find_elements(By.CSS_SELECTOR, "#tasks tr[data-task]")]
    check(badges and set(badges) == {"error"}, f"the result filter keeps the error answers ({badges})")
    d.get(f"{base}/dashboard/tasks")
    colours = {
        s: d.execute_script(
            "const e = document.querySelector(arguments[0]); return e && getComputedStyle(e).backgroundColor;",
            f"#tasks .s-{s}")
        for s in ("queued", "result_pending")
    }
    check(all(colours.values()) and len(set(colours.values())) == 2, f"states have colours of their own ({colours})")
    ago = d.find_element(By.CSS_SELECTOR, "#tasks .ago")
    check(ago.text.endswith("ago") and "UTC" in ago.get_attribute("title"),
          "times are relative, the UTC time on hover")
    fits(d, "tasks at 1,400 px")
    shot(d, shots, "tasks", WIDE)
    width(d, NARROW)
    d.get(f"{base}/dashboard/tasks")
    fits(d, "tasks at 800 px")
    shot(d, shots, "tasks", NARROW)


def bad_address(d, f):
    d.get(f"{f['base']}/dashboard/leases?min_age_ms=1e5")
    check("cannot read" in d.page_source and d.find_elements(By.LINK_TEXT, "Back"),
          "an address edited by hand gets a page with a way back, not JSON")


def screenshots(d, f, shots, pages):
    for name, path in pages:
        for px in (WIDE, NARROW):
            width(d, px)
            d.get(f"{f['base']}{path}")
            time.sleep(0.2)  # the fonts settle before the picture; nothing is awaited by it
            fits(d, f"{name} at {px} px")
            shot(d, shots, name, px)


def main(fixtures):
    f = json.load(open(fixtures))
    shots = f["shots"]
    d = browser()
    try:
        sign_in_refusals(d, f)
        width(d, WIDE)
        d.get(f"{f['base']}/dashboard/login")
        shot(d, shots, "login", WIDE)
        width(d, NARROW)
        shot(d, shots, "login", NARROW)
        width(d, WIDE)
        sign_in(d, f["base"], f["ops"])
        bad_address(d, f)
        stale_leases(d, f, shots)
        f["in_flight"] = f["leases"] - len(f["keyboard"]) - 1  # the row whose error was forced
        overview(d, f)
        task_page(d, f)
        audit(d, f)
        search(d, f, shots)
        screenshots(d, f, shots, [
            ("overview", "/dashboard"),
            ("task", f"/dashboard/tasks/{f['timeline']}"),
            ("audit", "/dashboard/audit"),
            ("retry", "/dashboard/retry"),
        ])
        print(f"dashboard pages in Chromium ({f['name']}): passed")
    finally:
        d.quit()


if __name__ == "__main__":
    main(sys.argv[1])
