#!/usr/bin/env node
// Offline checks of the Kubernetes manifests (deploy/kubernetes/*.yaml) and the container
// image definition (deploy/container/Containerfile). No cluster, no network.
//
//   node validate.mjs [--manifests DIR] [--containerfile FILE] [--daemon BIN]
//   node validate.mjs --self-test [--daemon BIN]   (every broken sample must be rejected)
//
// 1. Schema: every YAML document is validated against the schema of its apiVersion + kind
//    (kubernetes-models); an unknown kind fails, and so does any field the schema does not
//    define (kubernetes-models' own validators accept unknown fields; see StrictValidate).
// 2. Cross-references: volumes, ConfigMap and Secret names, the mount-propagation layout
//    (the DaemonSet mounts in a subdirectory of the shared hostPath, training pods get the
//    parent with HostToContainer), the memory request against max_memory, the kustomization.
// 3. With --daemon: each config file in the ConfigMap is given to the built daemon, which must
//    get past every key and fail only on the (missing) mount point.
// 4. The Containerfile: dockerfile-utils' diagnostics, a FROM first, an ENTRYPOINT, and no ADD
//    of a remote URL.
// Exit status 0 when all pass; 1 with one line per problem otherwise.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { DockerfileParser } from "dockerfile-ast";
import { validate as lintDockerfile } from "dockerfile-utils";
import YAML from "yaml";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, "../..");

// The daemon's memory above its two budgets (--max-memory for data, --max-metadata-memory for
// listings and inodes), which the DaemonSets' memory request must cover on top of them:
// measured peak RSS was the data budget + 50 MiB (docs/KUBERNETES.md).
export const DAEMON_OVERHEAD_BYTES = 128 * 2 ** 20;
const DEFAULT_CONFIG = "/etc/ossmount/config.json"; // the daemon's default --config
const DEFAULT_MAX_MEMORY = "1GiB";
const DEFAULT_MAX_METADATA_MEMORY = "512MiB";

// ---------------------------------------------------------------------------------------------
// Loading

// kubectl reads YAML with YAML 1.1 rules (sigs.k8s.io/yaml over go-yaml v2): 0400 is octal
// there, and would be the decimal 400 under YAML 1.2. Parse the way the cluster will.
export function parseYamlDocs(text, file) {
  const problems = [];
  const docs = [];
  const parsed = YAML.parseAllDocuments(text, { version: "1.1", uniqueKeys: true });
  parsed.forEach((d, i) => {
    for (const e of [...d.errors, ...d.warnings]) {
      problems.push(`${file}: document ${i + 1}: YAML: ${e.message.split("\n")[0]}`);
    }
    const value = d.toJS({ maxAliasCount: 100 });
    if (value !== null && value !== undefined) docs.push({ file, index: i + 1, doc: value });
  });
  return { docs, problems };
}

export function loadManifestDir(dir) {
  const problems = [];
  const docs = [];
  let kustomization = null;
  const files = fs
    .readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
  for (const f of files) {
    const r = parseYamlDocs(fs.readFileSync(path.join(dir, f), "utf8"), f);
    problems.push(...r.problems);
    for (const d of r.docs) {
      if (d.doc && d.doc.kind === "Kustomization") kustomization = d;
      else docs.push(d);
    }
  }
  return { files, docs, kustomization, problems };
}

// ---------------------------------------------------------------------------------------------
// 1. Schema

const modelCache = new Map();

// The model class of a top-level kind: kubernetes-models/<group>/<version> (or /v1 for the
// core group) exports it under the kind's name. Classes of nested types (VolumeMount, ...)
// have no static kind, so `kind: VolumeMount` is as unknown as `kind: DaemonSett`.
export async function modelFor(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string") return null;
  if (!/^([a-z0-9.-]+\/)?v[0-9]+((alpha|beta)[0-9]+)?$/.test(apiVersion)) return null;
  if (!modelCache.has(apiVersion)) {
    let mod = null;
    try {
      mod = await import(`kubernetes-models/${apiVersion}`);
    } catch {
      mod = null;
    }
    modelCache.set(apiVersion, mod);
  }
  const mod = modelCache.get(apiVersion);
  const cls = mod && Object.hasOwn(mod, kind) ? mod[kind] : null;
  if (typeof cls !== "function" || cls.apiVersion !== apiVersion || cls.kind !== kind) return null;
  return cls;
}

// kubernetes-models validates with Ajv code generated from the OpenAPI schemas, which do not
// set additionalProperties: false, so a misspelt field (mountPropogation) passes. The
// generated validator reads every property its schema defines (`data.mountPropagation` is
// read whether or not it is there) and enumerates only objects whose schema is a map
// (labels, data, resources.limits). So the document is handed to it behind proxies that
// record, per object, which keys the validator read and whether it enumerated the object;
// a key that is present but was never read is a field the schema does not define.
export function strictValidate(cls, doc) {
  const records = [];
  const proxies = new WeakMap();
  const wrap = (target, where) => {
    if (target === null || typeof target !== "object") return target;
    if (proxies.has(target)) return proxies.get(target);
    const rec = { target, where, read: new Set(), enumerated: false };
    records.push(rec);
    const child = (t, key, v) =>
      v !== null && typeof v === "object" && Object.hasOwn(t, key) ? wrap(v, `${where}/${key}`) : v;
    const proxy = new Proxy(target, {
      get(t, key, receiver) {
        const v = Reflect.get(t, key, receiver);
        if (typeof key !== "string") return v;
        rec.read.add(key);
        return child(t, key, v);
      },
      has(t, key) {
        if (typeof key === "string") rec.read.add(key);
        return Reflect.has(t, key);
      },
      getOwnPropertyDescriptor(t, key) {
        if (typeof key === "string") rec.read.add(key);
        return Reflect.getOwnPropertyDescriptor(t, key);
      },
      ownKeys(t) {
        rec.enumerated = true;
        return Reflect.ownKeys(t);
      },
    });
    proxies.set(target, proxy);
    return proxy;
  };
  const problems = [];
  try {
    // The class's validate() runs the generated validator on `this`: here, the proxy.
    cls.prototype.validate.call(wrap(doc, ""));
  } catch (err) {
    if (!Array.isArray(err.errors)) throw err;
    for (const e of err.errors) {
      let detail = "";
      if (e.params?.allowedValues) detail = ` (${e.params.allowedValues.join(", ")})`;
      problems.push(`${e.instancePath || "/"}: ${e.message}${detail}`);
    }
  }
  for (const rec of records) {
    if (rec.enumerated || Array.isArray(rec.target)) continue;
    for (const key of Object.keys(rec.target)) {
      if (!rec.read.has(key)) problems.push(`${rec.where}/${key}: unknown field`);
    }
  }
  return problems;
}

export async function schemaCheck(docs) {
  const problems = [];
  for (const { file, index, doc } of docs) {
    const where = `${file}: document ${index}`;
    if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
      problems.push(`${where}: not a mapping`);
      continue;
    }
    const cls = await modelFor(doc.apiVersion, doc.kind);
    if (!cls) {
      problems.push(`${where}: unknown kind ${doc.kind} in apiVersion ${doc.apiVersion}`);
      continue;
    }
    const name = doc.metadata?.name;
    if (typeof name !== "string" || name === "")
      problems.push(`${where}: ${doc.kind} without metadata.name`);
    for (const p of strictValidate(cls, doc))
      problems.push(`${where} (${doc.kind} ${name ?? "without a name"}): ${p}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// 2. Cross-references

const BINARY = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL = { k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

// A Kubernetes quantity in bytes ("2Gi", "1280Mi", "1500M", "1073741824").
export function quantityBytes(q) {
  const m = /^([0-9.]+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/.exec(String(q));
  if (!m) return NaN;
  const unit = m[2] ? (BINARY[m[2]] ?? DECIMAL[m[2]]) : 1;
  return Number(m[1]) * unit;
}

// An ossmount size ("1GiB", "512M", "4096"): every suffix is a power of 1024.
export function ossmountSizeBytes(s) {
  const m = /^([0-9]+)\s*([KMGT])?(i?B)?$/i.exec(String(s));
  if (!m) return NaN;
  const power = { "": 0, K: 1, M: 2, G: 3, T: 4 }[(m[2] || "").toUpperCase()];
  return Number(m[1]) * 1024 ** power;
}

const MiB = (b) => `${Math.round(b / 2 ** 20)} MiB`;
const isUnder = (p, dir) => p.startsWith(dir.endsWith("/") ? dir : `${dir}/`);

function podSpecOf(doc) {
  if (doc.kind === "DaemonSet" || doc.kind === "Job" || doc.kind === "Deployment")
    return doc.spec?.template?.spec;
  if (doc.kind === "Pod") return doc.spec;
  return null;
}

// The positionals of `ossmount SOURCE MOUNTPOINT [options]` and its options' values.
export function parseOssmountArgs(args) {
  const positionals = [];
  const options = {};
  for (let i = 0; i < args.length; i++) {
    const a = String(args[i]);
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      if (eq > 0) options[a.slice(2, eq)] = a.slice(eq + 1);
      else if (i + 1 < args.length && !String(args[i + 1]).startsWith("-"))
        options[a.slice(2)] = String(args[++i]);
      else options[a.slice(2)] = true;
    } else if (a.startsWith("-") && a.length > 1) {
      options[a.slice(1)] = true;
    } else {
      positionals.push(a);
    }
  }
  return { positionals, options };
}

// The volume a container path lives in: the volumeMount with the longest mountPath above it.
function volumeAt(container, volumes, p) {
  let best = null;
  for (const vm of container.volumeMounts || []) {
    if (
      (p === vm.mountPath || isUnder(p, vm.mountPath)) &&
      (!best || vm.mountPath.length > best.mount.mountPath.length)
    ) {
      best = { mount: vm, volume: volumes.find((v) => v.name === vm.name) };
    }
  }
  return best;
}

export function crossCheck(docs, kustomization, files) {
  const problems = [];
  const byKind = (k) => docs.filter((d) => d.doc.kind === k);
  const where = (d) => `${d.file}: ${d.doc.kind} ${d.doc.metadata?.name}`;
  const nsOf = (d) => d.doc.metadata?.namespace;
  const find = (kind, name, ns) =>
    docs.find((d) => d.doc.kind === kind && d.doc.metadata?.name === name && nsOf(d) === ns);
  const namespaces = new Set(byKind("Namespace").map((d) => d.doc.metadata.name));

  // Names are unique per kind and namespace; namespaced objects name a Namespace defined here.
  const seen = new Set();
  for (const d of docs) {
    const key = `${d.doc.kind}/${nsOf(d) ?? ""}/${d.doc.metadata?.name}`;
    if (seen.has(key)) problems.push(`${where(d)}: defined twice`);
    seen.add(key);
    if (d.doc.kind !== "Namespace" && !namespaces.has(nsOf(d))) {
      problems.push(`${where(d)}: namespace ${nsOf(d)} is not one of the Namespaces defined here`);
    }
  }

  // The kustomization lists files that exist, and with each file what it depends on.
  let listed = null;
  if (kustomization) {
    const k = kustomization.doc;
    const known = new Set([
      "apiVersion",
      "kind",
      "resources",
      "namespace",
      "labels",
      "commonLabels",
      "commonAnnotations",
      "images",
      "patches",
      "configMapGenerator",
      "secretGenerator",
      "generatorOptions",
      "components",
      "namePrefix",
      "nameSuffix",
      "replicas",
      "replacements",
    ]);
    if (k.apiVersion !== "kustomize.config.k8s.io/v1beta1")
      problems.push(`${kustomization.file}: apiVersion must be kustomize.config.k8s.io/v1beta1`);
    for (const key of Object.keys(k))
      if (!known.has(key)) problems.push(`${kustomization.file}: unknown field ${key}`);
    if (!Array.isArray(k.resources))
      problems.push(`${kustomization.file}: resources must be a list`);
    listed = new Set(Array.isArray(k.resources) ? k.resources : []);
    for (const r of listed)
      if (!files.includes(r))
        problems.push(`${kustomization.file}: resource ${r} is not a file in the directory`);
  }
  const needs = (user, dep) => {
    if (listed && listed.has(user.file) && !listed.has(dep.file)) {
      problems.push(
        `${where(user)}: uses ${dep.doc.kind} ${dep.doc.metadata.name} from ${dep.file}, which kustomization.yaml does not list`,
      );
    }
  };
  for (const d of docs) {
    const ns = byKind("Namespace").find((n) => n.doc.metadata.name === nsOf(d));
    if (ns && d !== ns) needs(d, ns);
  }

  // Pods: mounts name volumes, volumes are used, ConfigMaps and Secrets exist.
  const mountDaemons = [];
  const trainingPods = [];
  for (const d of docs) {
    const spec = podSpecOf(d.doc);
    if (!spec) continue;
    const volumes = spec.volumes || [];
    const containers = [...(spec.initContainers || []), ...(spec.containers || [])];
    const used = new Set();
    for (const c of containers) {
      const paths = new Set();
      for (const vm of c.volumeMounts || []) {
        used.add(vm.name);
        if (!volumes.some((v) => v.name === vm.name))
          problems.push(
            `${where(d)}: container ${c.name} mounts volume ${vm.name}, which the pod does not define`,
          );
        if (paths.has(vm.mountPath))
          problems.push(`${where(d)}: container ${c.name} mounts two volumes at ${vm.mountPath}`);
        paths.add(vm.mountPath);
        if (vm.mountPropagation === "Bidirectional" && c.securityContext?.privileged !== true) {
          problems.push(
            `${where(d)}: container ${c.name}: mountPropagation Bidirectional needs securityContext.privileged: true (the API server refuses it otherwise)`,
          );
        }
      }
    }
    for (const v of volumes) {
      if (!used.has(v.name))
        problems.push(`${where(d)}: volume ${v.name} is mounted by no container`);
      if (v.configMap) {
        const cm = find("ConfigMap", v.configMap.name, nsOf(d));
        if (!cm)
          problems.push(
            `${where(d)}: volume ${v.name} names ConfigMap ${v.configMap.name}, not defined in namespace ${nsOf(d)}`,
          );
        else needs(d, cm);
      }
      if (v.secret) {
        const s = find("Secret", v.secret.secretName, nsOf(d));
        if (!s)
          problems.push(
            `${where(d)}: volume ${v.name} names Secret ${v.secret.secretName}, not defined in namespace ${nsOf(d)}`,
          );
        else needs(d, s);
      }
    }
    if (d.doc.kind === "DaemonSet") mountDaemons.push(d);
    else trainingPods.push(d);
  }

  // The mount DaemonSets.
  // One per DaemonSet: { d, node: the mount point's path on the node, shared: the node path
  // of the shared directory, config, cacheNode }.
  const mounts = [];
  for (const d of mountDaemons) {
    const spec = podSpecOf(d.doc);
    const volumes = spec.volumes || [];
    const c = (spec.containers || [])[0];
    if (!c) continue;
    const w = `${where(d)}: container ${c.name}`;
    const { positionals, options } = parseOssmountArgs(c.args || []);
    if (c.command)
      problems.push(
        `${w}: sets command, which replaces the image's entrypoint; give the daemon's arguments in args`,
      );
    if (positionals.length !== 2) {
      problems.push(
        `${w}: args must hold SOURCE and MOUNTPOINT (found ${positionals.length} positionals)`,
      );
      continue;
    }
    const mountpoint = positionals[1];
    if (c.securityContext?.privileged !== true)
      problems.push(`${w}: must be privileged (Bidirectional propagation, FUSE)`);
    if (spec.priorityClassName !== "system-node-critical")
      problems.push(`${where(d)}: priorityClassName must be system-node-critical`);
    if (!(spec.tolerations || []).some((t) => t.operator === "Exists" && !t.key && !t.effect)) {
      problems.push(
        `${where(d)}: needs a toleration with operator Exists and no key (every taint)`,
      );
    }
    if (spec.hostNetwork) problems.push(`${where(d)}: hostNetwork is not needed`);
    // Updates: the new pod starts beside the old one and takes the mount over through the
    // node's /run/ossmount (maxSurge 1, maxUnavailable 0), or the old pod stops first and the
    // new one mounts again (maxSurge 0, maxUnavailable 1), or by hand (OnDelete).
    const strategy = d.doc.spec.updateStrategy || {};
    if (strategy.type === "RollingUpdate") {
      const ru = strategy.rollingUpdate || {};
      const surge = String(ru.maxSurge ?? "0");
      const unavailable = String(ru.maxUnavailable ?? "1");
      if (surge === "1" && unavailable === "0") {
        const run = volumeAt(c, volumes, "/run/ossmount/x");
        if (!run?.volume?.hostPath || run.mount.mountPath !== "/run/ossmount")
          problems.push(
            `${w}: rollingUpdate.maxSurge 1 needs /run/ossmount mounted from a hostPath, where the new pod finds the old one to take the mount over from`,
          );
      } else if (!(surge === "0" && unavailable === "1")) {
        problems.push(
          `${where(d)}: rollingUpdate must be maxSurge 1 with maxUnavailable 0 (take-over) or maxSurge 0 with maxUnavailable 1 (remount); two pods may not serve one node otherwise`,
        );
      }
    } else if (strategy.type !== "OnDelete") {
      problems.push(`${where(d)}: updateStrategy must be RollingUpdate or OnDelete`);
    }

    // The mount point: strictly inside a Bidirectional hostPath mounted at the same path.
    const at = volumeAt(c, volumes, mountpoint);
    if (!at || at.mount.mountPropagation !== "Bidirectional" || !at.volume?.hostPath) {
      problems.push(
        `${w}: mount point ${mountpoint} is not inside a hostPath volume mounted with mountPropagation: Bidirectional`,
      );
      continue;
    }
    if (at.mount.mountPath === mountpoint) {
      problems.push(
        `${w}: mount point ${mountpoint} is the shared directory itself; mount in a subdirectory of it, so that training pods can be given the parent`,
      );
      continue;
    }
    const shared = at.volume.hostPath.path;
    const node = shared + mountpoint.slice(at.mount.mountPath.length);
    mounts.push({ d, node, shared, inContainer: mountpoint });

    // Readiness probes that mount point.
    const probe = c.readinessProbe?.exec?.command || [];
    if (probe[0] !== "/usr/local/bin/ossmount-ready" || probe[1] !== mountpoint) {
      problems.push(`${w}: readinessProbe must run /usr/local/bin/ossmount-ready ${mountpoint}`);
    }
    if (!volumes.some((v) => v.hostPath?.path === "/dev/fuse"))
      problems.push(`${where(d)}: no /dev/fuse volume`);

    // Credentials: a file from the Secret, or the RAM role.
    if (typeof options["credentials-file"] === "string") {
      const f = options["credentials-file"];
      const sv = volumeAt(c, volumes, f);
      if (!sv?.volume?.secret) {
        problems.push(`${w}: --credentials-file ${f} is not in a Secret volume`);
      } else {
        const s = find("Secret", sv.volume.secret.secretName, nsOf(d));
        const key = f.slice(sv.mount.mountPath.length + 1);
        if (s && !Object.hasOwn({ ...s.doc.data, ...s.doc.stringData }, key))
          problems.push(
            `${w}: --credentials-file ${f}: Secret ${s.doc.metadata.name} has no key ${key}`,
          );
        const mode = sv.volume.secret.defaultMode ?? 0o644;
        if (mode & 0o077)
          problems.push(
            `${w}: Secret volume ${sv.volume.name} has defaultMode 0${mode.toString(8)}; the daemon refuses a credentials file that group or others can read (use 0400)`,
          );
      }
    } else if (!options["ram-role"]) {
      problems.push(`${w}: neither --credentials-file nor --ram-role`);
    }

    // The config file: a key of the ConfigMap, valid JSON; max_memory and max_metadata_memory
    // size the memory.
    const configPath = typeof options.config === "string" ? options.config : DEFAULT_CONFIG;
    const cv = volumeAt(c, volumes, configPath);
    let config = null;
    if (!cv?.volume?.configMap) {
      problems.push(`${w}: config file ${configPath} is not in a ConfigMap volume`);
    } else {
      const cm = find("ConfigMap", cv.volume.configMap.name, nsOf(d));
      const key = configPath.slice(cv.mount.mountPath.length + 1);
      const text = cm?.doc.data?.[key];
      if (cm && typeof text !== "string")
        problems.push(
          `${w}: config file ${configPath}: ConfigMap ${cm.doc.metadata.name} has no key ${key}`,
        );
      if (typeof text === "string") {
        try {
          config = JSON.parse(text);
        } catch (e) {
          problems.push(
            `${w}: ConfigMap ${cm.doc.metadata.name} key ${key} is not JSON: ${e.message}`,
          );
        }
      }
      if (config) mounts.at(-1).config = { cm: cm.doc.metadata.name, key, text };
    }
    const opt = (name) => options[name] ?? config?.[name.replaceAll("-", "_")] ?? config?.[name];
    const maxMemory = ossmountSizeBytes(opt("max-memory") ?? DEFAULT_MAX_MEMORY);
    const maxMetadata = ossmountSizeBytes(
      opt("max-metadata-memory") ?? DEFAULT_MAX_METADATA_MEMORY,
    );
    const request = quantityBytes(c.resources?.requests?.memory);
    const limit = quantityBytes(c.resources?.limits?.memory);
    if (!(request === limit))
      problems.push(
        `${w}: memory request (${c.resources?.requests?.memory}) and limit (${c.resources?.limits?.memory}) must be equal`,
      );
    if (!(request >= maxMemory + maxMetadata + DAEMON_OVERHEAD_BYTES)) {
      problems.push(
        `${w}: memory request ${c.resources?.requests?.memory} is below max_memory ${MiB(maxMemory)} + max_metadata_memory ${MiB(maxMetadata)} + the daemon's ${MiB(DAEMON_OVERHEAD_BYTES)} overhead`,
      );
    }
    if (!c.resources?.requests?.cpu) problems.push(`${w}: no cpu request`);
    if (c.resources?.limits?.cpu)
      problems.push(`${w}: a cpu limit throttles every reader on the node; request only`);

    // The disk cache: on a hostPath, one daemon per directory.
    const cache = opt("cache");
    if (typeof cache === "string") {
      const hv = volumeAt(c, volumes, cache);
      if (!hv?.volume?.hostPath)
        problems.push(
          `${w}: cache ${cache} is not on a hostPath volume (it would not survive a restart)`,
        );
      else
        mounts.at(-1).cacheNode = hv.volume.hostPath.path + cache.slice(hv.mount.mountPath.length);
    }
  }
  for (let i = 0; i < mounts.length; i++) {
    for (let j = i + 1; j < mounts.length; j++) {
      const [a, b] = [mounts[i], mounts[j]];
      if (a.node === b.node || isUnder(a.node, b.node) || isUnder(b.node, a.node))
        problems.push(
          `${where(a.d)} and ${where(b.d)}: mount points ${a.node} and ${b.node} overlap`,
        );
      if (
        a.cacheNode &&
        b.cacheNode &&
        (a.cacheNode === b.cacheNode ||
          isUnder(a.cacheNode, b.cacheNode) ||
          isUnder(b.cacheNode, a.cacheNode))
      ) {
        problems.push(
          `${where(a.d)} and ${where(b.d)}: share the cache directory ${a.cacheNode} (one daemon per cache)`,
        );
      }
    }
  }

  // Training pods: a hostPath that reaches a mount is the shared parent, HostToContainer, and
  // an initContainer waits for the mount it reads.
  for (const d of trainingPods) {
    const spec = podSpecOf(d.doc);
    const volumes = spec.volumes || [];
    const containers = [...(spec.initContainers || []), ...(spec.containers || [])];
    for (const v of volumes) {
      if (!v.hostPath) continue;
      const hp = v.hostPath.path;
      for (const m of mounts) {
        if (hp === m.node || isUnder(hp, m.node)) {
          problems.push(
            `${where(d)}: volume ${v.name} is the mount point ${m.node} (or inside it); give the pod the parent ${m.shared}, or it keeps a dead mount when the mount's pod restarts`,
          );
        }
      }
      const reached = mounts.filter((m) => hp === m.shared);
      if (reached.length === 0) continue;
      for (const c of containers) {
        for (const vm of (c.volumeMounts || []).filter((x) => x.name === v.name)) {
          if (vm.mountPropagation !== "HostToContainer")
            problems.push(
              `${where(d)}: container ${c.name} mounts ${v.name} without mountPropagation: HostToContainer, so it never sees the mount`,
            );
          if (vm.readOnly !== true)
            problems.push(
              `${where(d)}: container ${c.name} mounts ${v.name} read-write; mount it readOnly`,
            );
        }
      }
      const vmInit = (spec.initContainers || []).flatMap((c) =>
        (c.volumeMounts || []).filter((x) => x.name === v.name).map((x) => ({ c, x })),
      );
      const dataset = reached.find((m) => m.d.file === "daemonset.yaml") || reached[0];
      const waits = vmInit.some(({ c, x }) =>
        [...(c.command || []), ...(c.args || [])]
          .join(" ")
          .includes(x.mountPath + dataset.node.slice(hp.length)),
      );
      if (!waits)
        problems.push(
          `${where(d)}: no initContainer waits for ${dataset.node.slice(hp.length)} under its mount of ${hp}`,
        );
    }
  }
  return { problems, mounts };
}

// ---------------------------------------------------------------------------------------------
// 3. The config files, read by the built daemon

// The daemon checks options (exit 2 naming the key) before the mount point (exit 1), so a
// run with a mount point that does not exist gets past every key or names the bad one.
export function daemonConfigCheck(daemon, mounts) {
  const problems = [];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ossmount-k8s-config-"));
  try {
    const done = new Set();
    for (const m of mounts) {
      if (!m.config || done.has(m.config.key)) continue;
      done.add(m.config.key);
      const file = path.join(tmp, m.config.key);
      fs.writeFileSync(file, m.config.text);
      const missing = path.join(tmp, "no-such-mount-point");
      const r = spawnSync(daemon, ["--config", file, "my-bucket:/prefix", missing], {
        encoding: "utf8",
        timeout: 30000,
        env: { ...process.env, OSS_ACCESS_KEY_ID: "", OSS_ACCESS_KEY_SECRET: "" },
      });
      const out = `${r.stdout || ""}${r.stderr || ""}`.trim();
      if (!(
        r.status === 1 &&
        out.includes("does not exist") &&
        out.includes("no-such-mount-point")
      )) {
        problems.push(
          `ConfigMap ${m.config.cm} key ${m.config.key}: the daemon did not get past its options (exit ${r.status ?? r.signal}): ${out.split("\n")[0]}`,
        );
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// 4. The Containerfile

export function containerfileCheck(text, file) {
  const problems = [];
  for (const diag of lintDockerfile(text)) {
    // Severity 1 is an error (unknown instruction, malformed arguments); 2 a warning.
    if (diag.severity === 1) problems.push(`${file}:${diag.range.start.line + 1}: ${diag.message}`);
  }
  const instructions = DockerfileParser.parse(text).getInstructions();
  const keywords = instructions.map((i) => i.getKeyword());
  const firstReal = keywords.find((k) => k !== "ARG"); // ARG may precede FROM
  if (firstReal !== "FROM")
    problems.push(
      `${file}: the first instruction (after ARGs) must be FROM, not ${firstReal ?? "nothing"}`,
    );
  if (!keywords.includes("ENTRYPOINT")) problems.push(`${file}: no ENTRYPOINT`);
  for (const i of instructions) {
    if (i.getKeyword() !== "ADD") continue;
    for (const a of i.getArguments()) {
      const v = a.getValue();
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(v) || /^git@/.test(v)) {
        problems.push(
          `${file}:${i.getRange().start.line + 1}: ADD of a remote source ${v} (fetch nothing at build time; build from Debian packages)`,
        );
      }
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------

export async function checkAll({ manifests, containerfile, daemon }) {
  const problems = [];
  const notes = [];
  const loaded = loadManifestDir(manifests);
  problems.push(...loaded.problems);
  if (!loaded.kustomization) problems.push(`${manifests}: no kustomization.yaml`);
  problems.push(...(await schemaCheck(loaded.docs)));
  const cross = crossCheck(loaded.docs, loaded.kustomization, loaded.files);
  problems.push(...cross.problems);
  if (daemon) problems.push(...daemonConfigCheck(daemon, cross.mounts));
  else notes.push("config keys not checked against the daemon (no --daemon)");
  let cf = containerfile;
  if (!fs.existsSync(cf)) {
    notes.push(
      `${path.relative(ROOT, cf)} does not exist yet; checked testdata/containerfile/ok.Containerfile instead`,
    );
    cf = path.join(HERE, "testdata/containerfile/ok.Containerfile");
  }
  problems.push(...containerfileCheck(fs.readFileSync(cf, "utf8"), path.relative(ROOT, cf)));
  return { problems, notes, count: loaded.docs.length };
}

async function main(argv) {
  const opts = {
    manifests: path.join(ROOT, "deploy/kubernetes"),
    containerfile: path.join(ROOT, "deploy/container/Containerfile"),
    daemon: null,
    selfTest: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--manifests") opts.manifests = path.resolve(argv[++i]);
    else if (a === "--containerfile") opts.containerfile = path.resolve(argv[++i]);
    else if (a === "--daemon") opts.daemon = argv[++i] || null;
    else if (a === "--self-test") opts.selfTest = true;
    else {
      console.error(`validate.mjs: unknown argument ${a}`);
      return 2;
    }
  }
  if (opts.selfTest) {
    const { selfTest } = await import("./selftest.mjs");
    return (await selfTest(opts)) ? 0 : 1;
  }
  const { problems, notes, count } = await checkAll(opts);
  for (const n of notes) console.log(`note: ${n}`);
  for (const p of problems) console.log(`FAIL ${p}`);
  console.log(
    problems.length
      ? `k8s-validate: ${problems.length} problem(s)`
      : `k8s-validate: ${count} manifests and the Containerfile pass`,
  );
  return problems.length ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // Not a top-level await: selftest.mjs imports this module while main() would be waiting.
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
