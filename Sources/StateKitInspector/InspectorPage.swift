/// The inspector's page: one self-contained HTML file, its script and styles inline, loading
/// nothing from elsewhere. It reads `/api/state`, listens to `/events`, and posts undo and redo,
/// always with the token of its own address.
enum InspectorPage {
    static let html = #"""
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>StateKit Inspector</title>
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <style>
        :root{--bg:#f7f7f9;--fg:#1d1d1f;--mute:#6e6e73;--line:#dcdce1;--acc:#0a66c2;--ok:#1a7f37;--bad:#c62828}
        *{box-sizing:border-box}body{margin:0;font:13px/1.4 -apple-system,system-ui,sans-serif;background:var(--bg);color:var(--fg)}
        header{display:flex;gap:12px;align-items:center;padding:10px 16px;background:#fff;border-bottom:1px solid var(--line)}
        h1{font-size:16px;margin:0}h2{font-size:13px;margin:16px 16px 6px;text-transform:uppercase;color:var(--mute);letter-spacing:.04em}
        #status{padding:2px 8px;border-radius:9px;background:#eee;font-size:12px}#status.live{background:#dff3e4;color:var(--ok)}#status.down{background:#fde0e0;color:var(--bad)}
        table{border-collapse:collapse;width:calc(100% - 32px);margin:0 16px;background:#fff;border:1px solid var(--line)}
        th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}th{font-weight:600;color:var(--mute);background:#fafafa}
        td.value{min-width:340px}td.value pre{margin:0;max-height:110px;overflow:auto;white-space:pre-wrap;word-break:break-word;font:12px/1.35 ui-monospace,Menlo,monospace}
        code,.mono{font:12px ui-monospace,Menlo,monospace}.mute{color:var(--mute)}.bad{color:var(--bad)}.ok{color:var(--ok)}
        .flash{animation:flash 1s}@keyframes flash{from{background:#fff6c2}to{background:transparent}}
        .origin{padding:1px 6px;border-radius:8px;font-size:11px;background:#eee}.origin-local{background:#e3eefc}.origin-remote{background:#efe3fc}
        .origin-external{background:#fde9d9}.origin-undo,.origin-redo{background:#dff3e4}
        .filters{margin:0 16px 6px;display:flex;gap:8px}input,select,button{font:inherit;padding:3px 8px}
        button{border:1px solid var(--line);border-radius:5px;background:#fff;cursor:pointer}button:hover:not(:disabled){border-color:var(--acc);color:var(--acc)}
        .history{margin:0 16px 8px;padding:8px;background:#fff;border:1px solid var(--line)}.history ol{margin:6px 0 0;padding-left:22px;columns:2}.history li{margin:1px 0}
        del{background:#fde0e0;text-decoration:none}ins{background:#dff3e4;text-decoration:none}.scroll{max-height:45vh;overflow:auto;margin:0 16px}.scroll table{width:100%;margin:0}.scroll thead th{position:sticky;top:0}
        </style></head><body>
        <header><h1>StateKit Inspector</h1><span id="status">connecting…</span><span class="mute" id="summary"></span></header>
        <h2>Containers</h2>
        <table id="containers"><thead><tr><th>Key</th><th>Type</th><th>Version</th><th>Value</th><th>Subscribers</th><th>Storage</th><th>Sync</th></tr></thead><tbody></tbody></table>
        <h2>Time travel</h2><div id="histories"><p class="mute" style="margin:0 16px">No container is tracked by a StateHistory.</p></div>
        <h2>Change log</h2>
        <div class="filters"><input id="filter-key" placeholder="Filter by key"><select id="filter-origin">
        <option value="">All origins</option><option>local</option><option>remote</option><option>external</option><option>undo</option><option>redo</option></select>
        <span class="mute" id="log-count"></span></div>
        <div class="scroll"><table><thead><tr><th>Time</th><th>Key</th><th>Version</th><th>Origin</th><th>Change</th></tr></thead><tbody id="log"></tbody></table></div>
        <script>
        "use strict";
        const token = new URLSearchParams(location.search).get("token") || "";
        const q = "token=" + encodeURIComponent(token);
        const $ = s => document.querySelector(s);
        const esc = s => String(s).replace(/[&<>"']/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));
        const MAX_LOG = 500;
        let rows = new Map(), refreshTimer = null;
        function pretty(text, isJSON) { if (!isJSON) return text; try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; } }
        function flatten(v, path, out) {
          if (v !== null && typeof v === "object") { const keys = Object.keys(v); if (!keys.length) out[path || "(value)"] = JSON.stringify(v);
            for (const k of keys) flatten(v[k], path ? path + (Array.isArray(v) ? "[" + k + "]" : "." + k) : (Array.isArray(v) ? "[" + k + "]" : k), out); }
          else out[path || "(value)"] = JSON.stringify(v);
          return out;
        }
        function diff(oldText, newText, isJSON) {
          if (oldText === null || oldText === undefined) return "<ins>" + esc(newText) + "</ins> <span class=mute>(first seen)</span>";
          if (isJSON) { try { const a = flatten(JSON.parse(oldText), "", {}), b = flatten(JSON.parse(newText), "", {}); const parts = [];
              for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if (a[k] !== b[k]) {
                const label = k === "(value)" ? "" : "<code>" + esc(k) + "</code>: ";
                parts.push(label + (k in a ? "<del>" + esc(a[k]) + "</del>" : "") + " → " + (k in b ? "<ins>" + esc(b[k]) + "</ins>" : "<span class=mute>removed</span>")); }
              if (parts.length <= 6) return parts.join("<br>") || "<span class=mute>no visible difference</span>";
              return parts.slice(0, 6).join("<br>") + "<br><span class=mute>… " + (parts.length - 6) + " more</span>"; } catch (e) {} }
          return "<del>" + esc(oldText) + "</del> → <ins>" + esc(newText) + "</ins>";
        }
        function storageCell(s) { if (!s) return "<span class=mute>memory</span>";
          let h = s.location ? "<span class=mono>" + esc(s.location) + "</span><br>" : "";
          h += s.isPersisting ? "<span class=ok>saving</span>" : "<span class=mute>not saving</span>";
          if (s.saveError) h += "<br><span class=bad>save failed: " + esc(s.saveError) + "</span>"; else if (s.isPersisting) h += " <span class=ok>· last save ok</span>";
          if (s.loadError) h += "<br><span class=bad>load failed: " + esc(s.loadError) + "</span>"; return h; }
        function syncCell(s) { if (!s) return "<span class=mute>—</span>";
          let h = s.isSynced ? "<span class=ok>synced</span>" : "<span class=bad>" + esc(s.pending) + " pending" + (s.isPaused ? ", paused" : "") + "</span>";
          if (s.lastError) h += "<br><span class=bad>" + esc(s.lastError) + "</span>";
          for (const d of s.destinations) h += "<br><span class=mono>" + esc(d.name || "sink") + "</span>: " + (d.isAwaitingFirstContact ? "connecting" : d.pending + " pending, " + d.sent + " sent" + (d.failed ? ", " + d.failed + " failed" : "") + (d.isPaused ? ", paused" : ""));
          return h; }
        function renderState(state) {
          const body = $("#containers tbody"); body.innerHTML = ""; rows = new Map();
          for (const c of state.containers) {
            const tr = document.createElement("tr"); tr.dataset.key = c.key; tr.dataset.id = c.id;
            tr.innerHTML = "<td class=mono>" + esc(c.key) + "</td><td class=mono>" + esc(c.type) + "</td><td class=version>" + c.version +
              "</td><td class=value><pre>" + esc(pretty(c.value, c.valueIsJSON)) + "</pre></td><td class=subscribers>" + c.subscribers +
              "</td><td>" + storageCell(c.storage) + "</td><td>" + syncCell(c.sync) + "</td>";
            body.appendChild(tr); rows.set(c.id, tr);
          }
          $("#summary").textContent = state.containers.length + " containers";
          const hs = $("#histories"); if (!state.histories.length) return; hs.innerHTML = "";
          for (const h of state.histories) {
            const div = document.createElement("div"); div.className = "history"; div.dataset.history = h.id;
            let html = "<b>" + h.keys.map(esc).join(", ") + "</b> <button data-action=undo" + (h.canUndo ? "" : " disabled") + ">Undo</button> <button data-action=redo" + (h.canRedo ? "" : " disabled") + ">Redo</button><ol start=0>";
            html += "<li><span class=mute>start</span> " + (h.undoSteps.length ? "<button data-action=back data-steps=0>back to this step</button>" : "<b>← now</b>") + "</li>";
            h.undoSteps.forEach((keys, i) => { html += "<li>changed " + keys.map(esc).join(", ") + " " + (i === h.undoSteps.length - 1 ? "<b>← now</b>" : "<button data-action=back data-steps=" + (i + 1) + ">back to this step</button>") + "</li>"; });
            [...h.redoSteps].reverse().forEach(keys => { html += "<li class=mute>undone: " + keys.map(esc).join(", ") + "</li>"; });
            div.innerHTML = html + "</ol>"; hs.appendChild(div);
          }
        }
        async function refresh() { try { const r = await fetch("/api/state?" + q, {cache: "no-store"}); if (r.ok) renderState(await r.json()); } catch (e) {} }
        function refreshSoon() { if (!refreshTimer) refreshTimer = setTimeout(() => { refreshTimer = null; refresh(); }, 250); }
        function applyFilter(tr) { const k = $("#filter-key").value.trim().toLowerCase(), o = $("#filter-origin").value;
          tr.hidden = (k && !tr.dataset.key.toLowerCase().includes(k)) || (o && tr.dataset.origin !== o && !tr.dataset.origins.split(",").includes(o)); }
        function addChange(c) {
          const row = rows.get(c.id);
          if (row) { row.querySelector(".version").textContent = c.version; row.querySelector(".value pre").textContent = pretty(c.new, c.isJSON);
            row.classList.remove("flash"); void row.offsetWidth; row.classList.add("flash"); } else refreshSoon();
          const tr = document.createElement("tr"); tr.className = "change"; tr.dataset.key = c.key; tr.dataset.origin = c.origin; tr.dataset.origins = c.origins.join(",");
          const t = new Date(c.time), time = t.toLocaleTimeString([], {hour12: false}) + "." + String(t.getMilliseconds()).padStart(3, "0");
          const skipped = c.from !== null && c.version - c.from > 1 ? " <span class=mute>(" + (c.version - c.from) + " changes)</span>" : "";
          const more = c.origins.length > 1 ? " <span class=mute>+" + c.origins.filter(o => o !== c.origin).join(", ") + "</span>" : "";
          tr.innerHTML = "<td class=mono>" + time + "</td><td class=mono>" + esc(c.key) + "</td><td>" + c.version + skipped + "</td><td><span class='origin origin-" + esc(c.origin) + "'>" + esc(c.origin) + "</span>" + more + "</td><td class=mono>" + diff(c.old, c.new, c.isJSON) + "</td>";
          applyFilter(tr); const log = $("#log"); log.insertBefore(tr, log.firstChild);
          while (log.children.length > MAX_LOG) log.removeChild(log.lastChild);
          $("#log-count").textContent = log.children.length + " changes";
        }
        for (const id of ["#filter-key", "#filter-origin"]) $(id).addEventListener("input", () => { for (const tr of $("#log").children) applyFilter(tr); });
        $("#histories").addEventListener("click", async e => {
          const b = e.target.closest("button"); if (!b) return; const id = b.closest(".history").dataset.history;
          const steps = b.dataset.steps !== undefined ? "&steps=" + b.dataset.steps : "";
          await fetch("/api/history/" + id + "/" + b.dataset.action + "?" + q + steps, {method: "POST", headers: {"X-Inspector-Token": token}});
          refresh();
        });
        let pending = [], frame = false;
        function connect() {
          const events = new EventSource("/events?" + q);
          events.onopen = () => { $("#status").textContent = "live"; $("#status").className = "live"; refresh(); };
          events.onerror = () => { $("#status").textContent = "reconnecting…"; $("#status").className = "down"; };
          events.addEventListener("change", e => { pending.push(JSON.parse(e.data)); if (!frame) { frame = true; setTimeout(flush, 16); } });
          events.addEventListener("gap", () => { pending = []; refresh(); });
        }
        function flush() { frame = false; const batch = pending; pending = []; for (const c of batch.slice(-MAX_LOG)) addChange(c); if (batch.length) refreshSoon(); }
        refresh(); connect(); setInterval(refresh, 2000);
        </script></body></html>
        """#
}
