// The checks of validate.mjs must be able to fail: each broken sample is rejected with the
// message its first line expects, and each broken variant of the real manifests (built here
// by changing one thing in a copy) is rejected by the cross-reference checks.
//
//   node validate.mjs --self-test [--daemon BIN]
//
// testdata/schema/*.yaml        one schema fault each  (# expect: MESSAGE on the first line)
// testdata/containerfile/*      one Containerfile fault each, and ok.Containerfile, which passes
// MUTATIONS below               one cross-reference fault each, on deploy/kubernetes
// With --daemon, a misspelt key in the ConfigMap's config.json must be named by the daemon.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import {
  containerfileCheck,
  crossCheck,
  daemonConfigCheck,
  loadManifestDir,
  parseYamlDocs,
  schemaCheck,
} from "./validate.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));

const expectOf = (text, file) => {
  const m = /^# expect: (.+)$/m.exec(text);
  if (!m) throw new Error(`${file}: no '# expect:' line`);
  return m[1].trim();
};

const named = (list, name) => list.find((x) => x.name === name);
const doc = (docs, kind, name) =>
  docs.find((d) => d.doc.kind === kind && d.doc.metadata.name === name).doc;
const podOf = (docs, kind, name) => doc(docs, kind, name).spec.template.spec;
const mountContainer = (docs, name = "ossmount") => podOf(docs, "DaemonSet", name).containers[0];

// [what is broken, change to a copy of the manifests, message fragment expected]
const MUTATIONS = [
  [
    "the training pod mounts the mount point itself",
    (m) => {
      named(podOf(m.docs, "Job", "imagefolder-train").volumes, "ossmount").hostPath.path =
        "/mnt/ossmount/dataset";
    },
    "is the mount point /mnt/ossmount/dataset",
  ],
  [
    "the training container has no HostToContainer propagation",
    (m) => {
      delete named(podOf(m.docs, "Job", "imagefolder-train").containers[0].volumeMounts, "ossmount")
        .mountPropagation;
    },
    "mounts ossmount without mountPropagation: HostToContainer",
  ],
  [
    "the training pod mounts the parent read-write",
    (m) => {
      delete named(podOf(m.docs, "Job", "imagefolder-train").containers[0].volumeMounts, "ossmount")
        .readOnly;
    },
    "mounts ossmount read-write",
  ],
  [
    "the initContainer waits for another path",
    (m) => {
      const c = podOf(m.docs, "Job", "imagefolder-train").initContainers[0];
      c.command = c.command.map((a) => a.replaceAll("/data/dataset", "/data/other"));
    },
    "no initContainer waits for /dataset",
  ],
  [
    "a volumeMount names no volume",
    (m) => {
      named(mountContainer(m.docs).volumeMounts, "cache").name = "cahce";
    },
    "mounts volume cahce, which the pod does not define",
  ],
  [
    "a ConfigMap name does not match",
    (m) => {
      named(podOf(m.docs, "DaemonSet", "ossmount").volumes, "config").configMap.name =
        "ossmount-cfg";
    },
    "names ConfigMap ossmount-cfg",
  ],
  [
    "a Secret name does not match",
    (m) => {
      named(podOf(m.docs, "DaemonSet", "ossmount").volumes, "credentials").secret.secretName =
        "ossmount-creds";
    },
    "names Secret ossmount-creds",
  ],
  [
    "the daemon mounts on the shared directory itself",
    (m) => {
      mountContainer(m.docs).args[1] = "/mnt/ossmount";
    },
    "is the shared directory itself",
  ],
  [
    "the shared directory is not Bidirectional",
    (m) => {
      named(mountContainer(m.docs).volumeMounts, "shared").mountPropagation = "HostToContainer";
    },
    "is not inside a hostPath volume mounted with mountPropagation: Bidirectional",
  ],
  [
    "Bidirectional without privileged",
    (m) => {
      mountContainer(m.docs).securityContext.privileged = false;
    },
    "Bidirectional needs securityContext.privileged: true",
  ],
  [
    "the memory request is below the budget",
    (m) => {
      const r = mountContainer(m.docs).resources;
      r.requests.memory = r.limits.memory = "1Gi";
    },
    "memory request 1Gi is below max_memory 1024 MiB",
  ],
  [
    "max_memory grew in the ConfigMap and the request did not",
    (m) => {
      const cm = doc(m.docs, "ConfigMap", "ossmount-config");
      cm.data["config.json"] = cm.data["config.json"].replace('"1GiB"', '"4GiB"');
    },
    "is below max_memory 4096 MiB",
  ],
  [
    "max_metadata_memory grew in the ConfigMap and the request did not",
    (m) => {
      const cm = doc(m.docs, "ConfigMap", "ossmount-config");
      cm.data["config.json"] = cm.data["config.json"].replace(
        '"max_metadata_memory": "512MiB"',
        '"max_metadata_memory": "2GiB"',
      );
    },
    "max_metadata_memory 2048 MiB",
  ],
  [
    "memory request and limit differ",
    (m) => {
      mountContainer(m.docs).resources.limits.memory = "3Gi";
    },
    "must be equal",
  ],
  [
    "the Secret volume is readable by others",
    (m) => {
      named(podOf(m.docs, "DaemonSet", "ossmount").volumes, "credentials").secret.defaultMode =
        0o644;
    },
    "has defaultMode 0644",
  ],
  [
    "--credentials-file names a key the Secret lacks",
    (m) => {
      const a = mountContainer(m.docs).args;
      a[a.indexOf("--credentials-file") + 1] = "/etc/ossmount-secret/creds";
    },
    "Secret ossmount-credentials has no key creds",
  ],
  [
    "--config names a key the ConfigMap lacks",
    (m) => {
      const a = mountContainer(m.docs, "ossmount-checkpoints").args;
      a[a.indexOf("--config") + 1] = "/etc/ossmount/checkpoint.json";
    },
    "ConfigMap ossmount-config has no key checkpoint.json",
  ],
  [
    "the readiness probe checks another path",
    (m) => {
      mountContainer(m.docs).readinessProbe.exec.command[1] = "/mnt/ossmount";
    },
    "readinessProbe must run /usr/local/bin/ossmount-ready /mnt/ossmount/dataset",
  ],
  [
    "two DaemonSets mount at the same place",
    (m) => {
      mountContainer(m.docs, "ossmount-checkpoints").args[1] = "/mnt/ossmount/dataset";
    },
    "overlap",
  ],
  [
    "not system-node-critical",
    (m) => {
      delete podOf(m.docs, "DaemonSet", "ossmount").priorityClassName;
    },
    "priorityClassName must be system-node-critical",
  ],
  [
    "tolerates only some taints",
    (m) => {
      podOf(m.docs, "DaemonSet", "ossmount").tolerations = [
        { key: "nvidia.com/gpu", operator: "Exists" },
      ];
    },
    "needs a toleration with operator Exists and no key",
  ],
  [
    "a surge with a pod down as well would run two updates on one node",
    (m) => {
      doc(m.docs, "DaemonSet", "ossmount").spec.updateStrategy.rollingUpdate.maxUnavailable = 1;
    },
    "rollingUpdate must be maxSurge 1 with maxUnavailable 0 (take-over)",
  ],
  [
    "a surge pod without the node's /run/ossmount cannot take the mount over",
    (m) => {
      const pod = podOf(m.docs, "DaemonSet", "ossmount");
      pod.containers[0].volumeMounts = pod.containers[0].volumeMounts.filter(
        (v) => v.mountPath !== "/run/ossmount",
      );
    },
    "rollingUpdate.maxSurge 1 needs /run/ossmount mounted from a hostPath",
  ],
  [
    "the kustomization leaves out what the DaemonSet uses",
    (m) => {
      m.kustomization.doc.resources = m.kustomization.doc.resources.filter(
        (r) => r !== "configmap.yaml",
      );
    },
    "which kustomization.yaml does not list",
  ],
  [
    "the kustomization lists a missing file",
    (m) => {
      m.kustomization.doc.resources.push("daemonset-dataset.yaml");
    },
    "resource daemonset-dataset.yaml is not a file in the directory",
  ],
  [
    "an object in a namespace not defined here",
    (m) => {
      doc(m.docs, "ConfigMap", "ossmount-config").metadata.namespace = "ossmnt";
    },
    "namespace ossmnt is not one of the Namespaces defined here",
  ],
];

export async function selfTest({ manifests, daemon }) {
  let failures = 0;
  let passed = 0;
  const check = (label, problems, expected) => {
    const hit = problems.some((p) => p.includes(expected));
    if (hit) {
      passed++;
      console.log(`ok   ${label}: rejected (${problems.find((p) => p.includes(expected))})`);
    } else {
      failures++;
      console.log(
        `FAIL ${label}: expected a problem containing "${expected}", got ${problems.length ? problems.join(" | ") : "none"}`,
      );
    }
  };

  for (const f of fs.readdirSync(path.join(HERE, "testdata/schema")).sort()) {
    const text = fs.readFileSync(path.join(HERE, "testdata/schema", f), "utf8");
    const { docs, problems } = parseYamlDocs(text, f);
    problems.push(...(await schemaCheck(docs)));
    check(`schema/${f}`, problems, expectOf(text, f));
  }

  for (const f of fs.readdirSync(path.join(HERE, "testdata/containerfile")).sort()) {
    const text = fs.readFileSync(path.join(HERE, "testdata/containerfile", f), "utf8");
    const problems = containerfileCheck(text, f);
    if (f === "ok.Containerfile") {
      if (problems.length) {
        failures++;
        console.log(`FAIL containerfile/${f}: should pass, got ${problems.join(" | ")}`);
      } else {
        passed++;
        console.log(`ok   containerfile/${f}: passes`);
      }
    } else {
      check(`containerfile/${f}`, problems, expectOf(text, f));
    }
  }

  // The real manifests pass the cross-checks unchanged; each mutation must not.
  const pristine = loadManifestDir(manifests);
  const base = crossCheck(pristine.docs, pristine.kustomization, pristine.files);
  if (base.problems.length) {
    failures++;
    console.log(`FAIL the manifests themselves: ${base.problems.join(" | ")}`);
  }
  for (const [label, mutate, expected] of MUTATIONS) {
    const copy = structuredClone({ docs: pristine.docs, kustomization: pristine.kustomization });
    mutate(copy);
    check(
      `cross-check: ${label}`,
      crossCheck(copy.docs, copy.kustomization, pristine.files).problems,
      expected,
    );
  }

  if (daemon) {
    const copy = structuredClone({ docs: pristine.docs, kustomization: pristine.kustomization });
    const cm = doc(copy.docs, "ConfigMap", "ossmount-config");
    cm.data["config.json"] = cm.data["config.json"].replace('"max_memory"', '"max_memroy"');
    const { mounts } = crossCheck(copy.docs, copy.kustomization, pristine.files);
    check(
      "daemon: a misspelt key in config.json",
      daemonConfigCheck(daemon, mounts),
      'key "max_memroy"',
    );
  } else {
    console.log("note: no --daemon, the config-key case is not run");
  }

  console.log(`k8s-validate self-test: ${passed} passed, ${failures} failed`);
  return failures === 0;
}
