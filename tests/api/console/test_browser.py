"""The console in a real browser (Debian's headless Chromium through Playwright) against a served
mothership whose in-process workers deploy to the test-bed cluster: sign in, the fleet, a
cluster whose Deployment never gets ready (its blocking object shown, `failing` in red through
its retries, still failing after disable and enable), a cluster whose apiserver was stopped
(deleted, the stuck delete named, forgotten), a status change appearing live, a rollback; a
viewer sees no buttons and the API refuses them; nothing secret in the page, the event stream
or the browser's storage but the user's token.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Browser, Page, Response, expect

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.api.convert import spec_from
from reconciler.api.schemas import ClusterIn
from reconciler.charts.sources import ChartCache
from reconciler.core.actions import ActionRegistry
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.devcluster import DevCluster
from reconciler.devcluster.build import build_all
from reconciler.kube.client import KubeClient
from reconciler.model.cluster import ClusterSpec
from reconciler.model.health import ClusterHealth
from reconciler.model.status import ClusterStatus
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import InProcessInvoker, Invoker
from reconciler.mothership.planner import Planner
from tests.api.console.browser import ServedConsole, served_console
from tests.api.console.kyma_objects import create_kyma_objects
from tests.api.support import Tokens, cluster_body
from tests.conftest import KubeTarget
from tests.helpers.charts import CONFIGMAPS, DEPLOYMENT, make_chart
from tests.helpers.clusters import cluster_spec
from tests.helpers.fleet import bulk_fleet

SECRET_VALUE = "hunter2-secret-value"  # `secret: true` in every cluster_body component
SLOW = 90_000  # ms: a run on a busy machine, with a readiness timeout in it
SHOTS = os.environ.get("RECONCILER_CONSOLE_SCREENSHOTS")
"""A directory to write the screenshots of docs/console.md to (docs/images), when set."""


def shot(page: Page, name: str, *, full_page: bool = False) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"console-{name}.png"), full_page=full_page)


def in_process(cache: Path) -> Any:
    def factory(planner: Planner) -> Invoker:
        core = ComponentReconciler(HelmChartProvider(ChartCache(cache)), ActionRegistry())
        return InProcessInvoker(planner, core, timeout=5)

    return factory


def body(runtime_id: str, kubeconfig: str, chart: Path, namespace: str, **values: Any) -> Any:
    data = cluster_body(runtime_id, kubeconfig=kubeconfig, components=(chart.name,))
    (component,) = data["kymaConfig"]["components"]
    component.update({"URL": str(chart), "namespace": namespace})
    component["configuration"] += [{"key": k, "value": v} for k, v in values.items()]
    return data


def spec_of(data: Any) -> ClusterSpec:
    return spec_from(ClusterIn.model_validate(data))


@dataclass
class World:
    served: ServedConsole
    tokens: Tokens
    kubeconfig: str
    bodies: dict[str, Any]
    namespace: str


def stopped_cluster(directory: Path) -> str:
    """The kubeconfig of a cluster that was started and stopped again (its apiserver gone)."""
    build_all()
    cluster = DevCluster(directory, controller_manager=False, die_with_parent=True)

    async def start_and_stop() -> str:
        await cluster.start()
        try:
            return cluster.kubeconfig.read_text()
        finally:
            await cluster.stop()

    return asyncio.run(start_and_stop())


@pytest.fixture(scope="module")
def world(kube_cluster: KubeTarget, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """A served mothership with `rt-good` (ready), `rt-stuck` (a Deployment nobody runs:
    failing, blocked by it; retried every second) and `rt-dead` (its apiserver stopped) on the
    test bed, and its console pointed at a Kyma there."""
    directory = tmp_path_factory.mktemp("console")
    tokens = Tokens.write(directory)
    namespace = f"console-{uuid.uuid4().hex[:6]}"
    kubeconfig = kube_cluster.kubeconfig.read_text()
    dead = stopped_cluster(tmp_path_factory.mktemp("dead-kube"))
    good = make_chart(directory, "greeter", {"cm.yaml": CONFIGMAPS}, {"configmaps": ["hello"]})
    stuck = make_chart(directory, "stuck-app", {"deploy.yaml": DEPLOYMENT})
    bodies = {
        "rt-good": body("rt-good", kubeconfig, good, namespace, greeting="hello"),
        "rt-stuck": body("rt-stuck", kubeconfig, stuck, namespace),
        "rt-dead": body("rt-dead", dead, good, namespace),
    }
    settings = ApiSettings(tokens_file=tokens.path, console_kubeconfig=kube_cluster.kubeconfig)
    with served_console(
        directory,
        settings,
        invoker=in_process(directory / "cache"),
        max_retries=0,
        retry_interval=1.0,
    ) as served:

        async def setup(engine: Engine) -> None:
            async with KubeClient.from_kubeconfig(kube_cluster.kubeconfig) as client:
                await client.request(
                    "POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}}
                )
            for data in bodies.values():
                await engine.service.upsert_cluster(spec_of(data))
            await create_kyma_objects(kube_cluster.kubeconfig, namespace)

        served.call(setup)
        try:
            yield World(served, tokens, kubeconfig, bodies, namespace)
        finally:

            async def cleanup(_: Engine) -> None:
                async with KubeClient.from_kubeconfig(kube_cluster.kubeconfig) as client:
                    await client.request("DELETE", f"/api/v1/namespaces/{namespace}")

            served.call(cleanup)


def sign_in(browser: Browser, url: str, token: str, start: str = "/ui/") -> Page:
    page = browser.new_context(viewport={"width": 1200, "height": 760}).new_page()
    page.goto(url + start)
    page.wait_for_url("**/ui/signin**")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**{start}*")
    return page


def status_of(served: ServedConsole, runtime_id: str) -> ClusterStatus:
    async def read(engine: Engine) -> ClusterStatus:
        return (await engine.service.cluster(runtime_id)).status

    return served.call(read)


def test_an_admin_finds_the_blocked_component_disables_enables_and_rolls_back(
    world: World, browser: Browser
) -> None:
    served, tokens = world.served, world.tokens
    page = sign_in(browser, served.url, tokens.by_role[Role.ADMIN])
    events: list[str] = []
    page.on("framenavigated", lambda frame: events.append(frame.url))
    page.on("dialog", lambda dialog: dialog.accept())
    bodies: list[str] = []
    page.on("response", lambda response: bodies.append(_text(response)))

    # the fleet, filtered by text
    fleet = page.locator("table.fleet tbody")
    expect(fleet.get_by_role("link", name="rt-good")).to_be_visible()
    page.get_by_label("Search").fill("stuck")
    expect(fleet.locator("tr")).to_have_count(1)
    expect(fleet.get_by_role("link", name="rt-stuck")).to_be_visible()
    assert "q=stuck" in page.url  # the filter is kept in the address

    # the stuck cluster fails (and retries); its operation names what blocks it
    fleet.get_by_role("link", name="rt-stuck").click()
    page.wait_for_url("**/ui/clusters/rt-stuck")
    status = page.locator("#cluster-status")
    row = page.locator("#runs table.ops tr", has_text="stuck-app").first
    blocked_by = row.locator("td.blocking")
    expect(blocked_by).to_contain_text(
        f"deployment {world.namespace}/stuck-app: 0/1 replicas available", timeout=SLOW
    )
    shot(page, "cluster")

    # disable and enable: the status follows without a reload; enabling claims no result
    health = page.locator("#cluster-health")
    expect(health).to_have_text("failing", timeout=SLOW)
    navigations = len(events)
    page.get_by_role("button", name="Disable").click()
    expect(status).to_have_text("reconcile_disabled")
    expect(health).to_have_text("disabled")
    assert status_of(served, "rt-stuck") is ClusterStatus.RECONCILE_DISABLED
    expect(page.get_by_role("button", name="Enable")).to_be_focused()  # kept across the swap
    page.keyboard.press("Enter")  # the keyboard works the buttons
    expect(page.get_by_role("button", name="Disable")).to_be_visible()
    expect(health).to_have_text("failing")  # until a run proves otherwise
    assert status_of(served, "rt-stuck") is not ClusterStatus.READY

    # a change made elsewhere (here: the service itself) appears live
    async def disable(engine: Engine) -> None:
        await engine.service.set_status("rt-stuck", ClusterStatus.RECONCILE_DISABLED)

    served.call(disable)
    expect(status).to_have_text("reconcile_disabled", timeout=15_000)
    assert len(events) == navigations  # no reload

    # roll rt-good back to its first configuration
    async def reconfigure(engine: Engine) -> int:
        data = copy.deepcopy(world.bodies["rt-good"])
        data["kymaConfig"]["components"][0]["configuration"][-1]["value"] = "bonjour"
        return (await engine.service.upsert_cluster(spec_of(data))).config_version

    page.goto(served.url + "/ui/clusters/rt-good")
    status = page.locator("#cluster-status")
    expect(status).to_have_text("ready", timeout=SLOW)
    first = served.call(lambda engine: _first_config(engine, "rt-good"))
    second = served.call(reconfigure)
    expect(status).to_have_text("ready", timeout=SLOW)
    caption = page.locator("#diff table.diff caption")
    page.get_by_label("Compare").select_option(str(first))
    page.get_by_label("with").select_option(str(second))
    page.get_by_role("button", name="Show diff").click()
    expect(caption).to_contain_text(f"Configuration {first} (left) and {second} (right)")
    page.get_by_role("button", name=f"Roll back to {first}").click()
    configs = page.locator("#configs table")
    expect(configs).to_contain_text(f"rollback to {first}")
    # the diff shown before is replaced by what the rollback changed: no stale caption
    expect(caption).to_contain_text(f"Configuration {second} (left) and ")
    expect(caption).not_to_contain_text(f"Configuration {first} (left)")
    expect(page.locator("#diff table.diff")).to_contain_text("bonjour")
    expect(page.locator("#history")).to_contain_text(f"rollback to {first}", timeout=SLOW)
    expect(status).to_have_text("ready", timeout=SLOW)

    # the diff of the two versions, secret values redacted
    page.get_by_label("Compare").select_option(str(first))
    page.get_by_label("with").select_option(str(second))
    page.get_by_role("button", name="Show diff").click()
    expect(page.locator("table.diff")).to_contain_text("bonjour")
    page.locator("#diff").scroll_into_view_if_needed()
    shot(page, "rollback-diff")

    # on a phone (414 px) the pages are no wider than the screen: wide tables scroll inside
    page.set_viewport_size({"width": 414, "height": 896})
    for address in ("/ui/clusters/rt-good", "/ui/"):
        if address != "/ui/clusters/rt-good":
            page.goto(served.url + address)
            expect(page.locator("#fleet table")).to_be_visible(timeout=SLOW)
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{address} is {overflow} px wider than a 414 px screen"
    shot(page, "fleet-414px")
    page.set_viewport_size({"width": 1200, "height": 760})
    page.goto(served.url + "/ui/clusters/rt-good")
    expect(page.locator("#cluster-status")).to_have_text("ready", timeout=SLOW)

    # nothing secret anywhere but the token; signing out removes it
    storage = json.loads(page.evaluate("() => JSON.stringify(sessionStorage)"))
    assert storage.pop("reconciler.token") == tokens.by_role[Role.ADMIN]
    assert storage == {"htmx-current-path-for-history": "/ui/clusters/rt-good"}  # htmx's own
    assert page.evaluate("() => localStorage.length") == 0
    assert page.context.cookies() == []
    seen = "\n".join([page.content(), *bodies])
    for secret in (SECRET_VALUE, *_credentials(world.kubeconfig)):
        assert secret not in seen
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/ui/signin")
    assert page.evaluate("() => sessionStorage.length") == 0


RED = "rgb(180, 35, 24)"  # --bad of console.css


def color_of(locator: Any) -> str:
    """The element's computed colour now; an element the live update just replaced has none
    (""), so it is read again from the new one, within a deadline."""
    deadline = time.monotonic() + 5
    color = ""
    while not color and time.monotonic() < deadline:
        color = str(locator.evaluate("e => e.isConnected ? getComputedStyle(e).color : ''"))
    return color


def health_of(served: ServedConsole, runtime_id: str) -> ClusterHealth:
    async def read(engine: Engine) -> ClusterHealth:
        return await engine.service.health(runtime_id)

    return served.call(read)


def test_failing_is_red_through_the_retries_and_a_dead_cluster_is_deleted_then_forgotten(
    world: World, browser: Browser
) -> None:
    served, tokens = world.served, world.tokens

    async def enable(engine: Engine) -> None:  # an earlier test may have disabled it
        if (await engine.service.cluster("rt-stuck")).status is ClusterStatus.RECONCILE_DISABLED:
            await engine.service.set_status("rt-stuck", ClusterStatus.READY)

    served.call(enable)
    page = sign_in(browser, served.url, tokens.by_role[Role.ADMIN])
    page.on("dialog", lambda dialog: dialog.accept())

    # the fleet: counted and filtered by health; failing in red
    failing_count = page.locator('[data-health-count="failing"]')
    expect(failing_count).not_to_have_text("0", timeout=SLOW)
    page.locator("#count-health-failing").click()
    fleet = page.locator("table.fleet tbody")
    expect(fleet.get_by_role("link", name="rt-stuck")).to_be_visible(timeout=SLOW)
    expect(fleet.get_by_role("link", name="rt-good")).to_have_count(0)
    assert "health=failing" in page.url
    cell = page.locator('[data-health="rt-stuck"]')
    expect(cell).to_have_text("failing")
    expect(cell).to_have_css("color", RED)

    # the cluster: failing at every moment of a whole retry cycle, never reconciling or blue
    fleet.get_by_role("link", name="rt-stuck").click()
    page.wait_for_url("**/ui/clusters/rt-stuck")
    health = page.locator("#cluster-health")
    expect(health).to_have_text("failing", timeout=SLOW)
    start = health_of(served, "rt-stuck").evidence.consecutive_failures
    seen, statuses = set(), set()
    while health_of(served, "rt-stuck").evidence.consecutive_failures < start + 2:
        seen.add(health.inner_text())
        statuses.add(page.locator("#cluster-status").inner_text())
        assert color_of(health) == RED
        page.wait_for_timeout(250)
    assert seen == {"failing"}
    assert "reconciling" in statuses  # the retries did run, shown as such in the status
    expect(page.locator("#health-cause")).to_contain_text("stuck-app")
    expect(page.locator("#health-cause")).to_contain_text("0/1 replicas available")
    history_health = page.locator("#history .timeline li").first.locator(".health")
    expect(history_health).to_have_text("failing")
    expect(history_health).to_have_css("color", RED)
    shot(page, "failing")

    # the dead cluster: delete (confirmed), the delete cannot finish and says so, forget it
    page.goto(served.url + "/ui/clusters/rt-dead")
    health = page.locator("#cluster-health")
    expect(health).to_have_text("unreachable", timeout=SLOW)
    page.get_by_role("button", name="Delete").click()
    expect(page.locator("#cluster-status")).to_have_text("deleting", timeout=SLOW)
    expect(page.locator("#delete-stuck")).to_contain_text(
        "The deletion cannot finish: the cluster's apiserver cannot be reached", timeout=SLOW
    )
    expect(health).to_have_text("unreachable")
    page.get_by_role("button", name="Forget").click()
    page.wait_for_url("**/ui/")
    expect(page.locator("table.fleet tbody").get_by_role("link", name="rt-good")).to_be_visible()
    expect(page.locator("table.fleet tbody").get_by_role("link", name="rt-dead")).to_have_count(0)
    assert status_of(served, "rt-dead") is ClusterStatus.DELETED


def test_a_viewer_sees_no_action_the_api_refuses_one_and_the_kyma_view_reads(
    world: World, browser: Browser
) -> None:
    served, tokens = world.served, world.tokens
    token = tokens.by_role[Role.VIEWER]
    page = sign_in(browser, served.url, token, start="/ui/clusters/rt-good")
    expect(page.locator("#cluster-status")).to_be_visible(timeout=SLOW)
    expect(page.locator("#configs table")).to_be_visible()
    expect(page.locator("main button[data-action]")).to_have_count(0)

    refused = page.evaluate(
        """async (token) => (await fetch('/v1/clusters/rt-good/status', {
            method: 'PUT',
            headers: {Authorization: 'Bearer ' + token, 'Content-Type': 'application/json'},
            body: JSON.stringify({status: 'reconcile_disabled'})})).status""",
        token,
    )
    assert refused == 403

    page.get_by_role("link", name="Kyma modules").click()
    manifests = page.locator("#kyma tr", has_text=f"{world.namespace}/kyma-console-")
    expect(manifests.filter(has_text="eventing")).to_contain_text("Error")
    expect(manifests.filter(has_text="serverless")).to_contain_text("Ready")
    shot(page, "kyma")


async def _first_config(engine: Engine, runtime_id: str) -> int:
    return min(config.version for config in await engine.service.configs(runtime_id))


def _text(response: Response) -> str:
    try:
        return str(response.text())
    except Exception:  # redirects and aborted polls have no body
        return ""


def _credentials(kubeconfig: str) -> list[str]:
    """The kubeconfig's credential values (certificate keys, tokens)."""
    data = yaml.safe_load(kubeconfig)
    found: list[str] = []
    for user in data.get("users", []):
        for key, value in (user.get("user") or {}).items():
            if key in ("client-key-data", "token", "password") and value:
                found.append(str(value)[:64])
    return found


FLEET = 10_000
STATUSES = (
    *[ClusterStatus.READY] * 16,
    ClusterStatus.ERROR,
    ClusterStatus.RECONCILE_DISABLED,
    ClusterStatus.RECONCILE_PENDING,
    ClusterStatus.RECONCILING,
)


@pytest.fixture(scope="module")
def big_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServedConsole, str]]:
    """10,000 clusters in the inventory of a served mothership whose loops do not run."""
    directory = tmp_path_factory.mktemp("fleet")
    tokens = Tokens.write(directory)
    settings = ApiSettings(tokens_file=tokens.path)
    with served_console(directory, settings, run_loops=False) as served:

        async def fill(engine: Engine) -> None:
            specs = [
                cluster_spec(f"rt-{n:05d}", version=("2.4.0", "2.5.0", "2.6.1")[n % 3])
                for n in range(FLEET)
            ]
            await bulk_fleet(engine.service.inventory, specs, STATUSES)

        served.call(fill)
        yield served, tokens.by_role[Role.VIEWER]


FLEET_ANSWERS = """(since) => performance.getEntriesByType('resource')
    .filter(e => e.name.includes('/ui/fragments/fleet') && e.startTime >= since
                 && e.encodedBodySize > 0)
    .map(e => e.responseEnd)"""


def _until_answered(page: Page, act: Callable[[], None], done: Callable[[], None]) -> float:
    """Milliseconds, by the browser's clock, from `act` to the end of the last fleet fragment
    that brought new content (what the page then swaps in), once `done` holds."""
    since = page.evaluate("() => performance.now()")
    act()
    done()
    return float(max(page.evaluate(FLEET_ANSWERS, since)) - since)


def test_fleet_of_10000_paints_and_filters_quickly_in_a_light_page(
    big_fleet: tuple[ServedConsole, str], browser: Browser
) -> None:
    served, token = big_fleet
    context = browser.new_context(viewport={"width": 1200, "height": 760})
    context.add_init_script(f"sessionStorage.setItem('reconciler.token', {json.dumps(token)})")
    page = context.new_page()
    rows = page.locator("table.fleet tbody tr")
    summary = page.locator("#fleet-summary")

    page.goto(served.url + "/ui/")
    expect(rows).to_have_count(50)
    expect(summary).to_contain_text(f"{FLEET} clusters")
    first_paint = min(page.evaluate(FLEET_ANSWERS, 0))  # since navigation start
    html, scripts, asked = page.evaluate(
        """() => {
            const nav = performance.getEntriesByType('navigation')[0];
            const fleet = performance.getEntriesByType('resource')
                .find(e => e.name.includes('/ui/fragments/fleet'));
            return [nav.responseEnd, nav.domContentLoadedEventEnd, fleet.requestStart];
        }"""
    )
    shot(page, "fleet")
    weight = page.evaluate(
        """() => [...performance.getEntriesByType('navigation'),
                  ...performance.getEntriesByType('resource')]
                 .reduce((sum, entry) => sum + entry.encodedBodySize, 0)"""
    )

    with page.expect_response(
        lambda r: "/ui/fragments/fleet" in r.url and r.status == 304, timeout=15_000
    ):
        pass  # the next poll of an unchanged fleet: 304, nothing swapped

    errors = FLEET // len(STATUSES)
    status_filter = _until_answered(
        page,
        lambda: page.get_by_role("button", name=f"error {errors}", exact=True).click(),
        lambda: expect(summary).to_contain_text(f"{errors} clusters with status error"),
    )
    text_filter = _until_answered(
        page,
        lambda: page.get_by_label("Search").fill("rt-0999"),
        lambda: expect(rows).to_have_count(1),
    )
    sort = _until_answered(
        page,
        lambda: page.get_by_role("button", name="Kyma version").click(),
        lambda: expect(page.locator("th[aria-sort=ascending]")).to_contain_text("Kyma"),
    )

    print(
        f"\nfleet of {FLEET} (browser clock): data painted {first_paint:.0f} ms after"
        f" navigation start (page {html:.0f} ms, scripts ready {scripts:.0f} ms, fleet"
        f" asked {asked:.0f} ms); status filter {status_filter:.0f} ms; text filter"
        f" {text_filter:.0f} ms (150 ms of it the typing debounce); sort {sort:.0f} ms;"
        f" page weight {weight / 1024:.1f} KiB"
    )
    assert weight < 200 * 1024
    assert first_paint < 5000  # the figure is 300 ms; only a broken page takes seconds
    context.close()


def test_without_authentication_the_console_asks_for_no_token_and_with_it_signs_in(
    tmp_path: Path, browser: Browser
) -> None:
    """`make demo` runs the mothership with auth=none: its console must open, not ask for a
    token nobody has; a mothership that needs one still sends a tokenless visitor to sign in."""
    with served_console(tmp_path / "open", ApiSettings(auth="none"), run_loops=False) as served:
        served.call(lambda engine: engine.service.upsert_cluster(cluster_spec("rt-open")))
        page = browser.new_page()
        page.goto(served.url + "/ui/")
        expect(page.locator("table.fleet tbody tr")).to_have_count(1)
        assert "/ui/signin" not in page.url
        page.close()
    (tmp_path / "closed").mkdir()
    tokens = Tokens.write(tmp_path / "closed")
    with served_console(
        tmp_path / "closed", ApiSettings(tokens_file=tokens.path), run_loops=False
    ) as served:
        page = browser.new_page()
        page.goto(served.url + "/ui/")
        page.wait_for_url("**/ui/signin**")
        page.close()
