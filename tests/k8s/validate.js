// Validates Kubernetes manifests the way the API server would, without a
// cluster, for tests/e2e/test_deploy_manifests.py: every object of every
// YAML file against the Kubernetes API's own OpenAPI schema (the npm package
// kubernetes-models, pinned in package-lock.json), plus the checks the API
// server and the kubelet make beyond that schema which a mistake in
// deploy/kubernetes/ would hit (a container without an image, a mount of an
// undeclared volume, a ConfigMap or Secret key the pod needs but no manifest
// holds, a selector that misses the template's labels).
//
//   node validate.js FILE...                  validate; one line per object;
//                                             exit 0 if all pass, 1 if not
//   node validate.js --get KIND/NAME KEY FILE...
//                                             print the data (or stringData)
//                                             KEY of a ConfigMap or Secret
// Exit 2: bad usage or a file that cannot be read or parsed.
'use strict';

const fs = require('fs');
const path = require('path');
const YAML = require('yaml');

function die(message) {
  process.stderr.write(`validate.js: ${message}\n`);
  process.exit(2);
}

// kubectl reads manifests with sigs.k8s.io/yaml, which is YAML 1.1
// (`yes` is a boolean, 0444 is octal): parse them the same way.
function readObjects(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    die(`${file}: ${error.message}`);
  }
  const objects = [];
  for (const document of YAML.parseAllDocuments(text, { version: '1.1', uniqueKeys: true })) {
    if (document.errors.length > 0) die(`${file}: ${document.errors[0].message}`);
    const object = document.toJS({ maxAliasCount: 100 });
    if (object === null || object === undefined) continue; // an empty document
    objects.push({ file, object });
  }
  return objects;
}

function describe({ file, object }) {
  const name = object.metadata && object.metadata.name;
  return `${path.basename(file)}: ${object.kind || '(no kind)'}/${name || '(no name)'}`;
}

// The model class of apiVersion/kind: kubernetes-models/<group>/<version>/<Kind>
// ("v1" is the core group).
function modelOf(object) {
  if (typeof object.apiVersion !== 'string' || typeof object.kind !== 'string') {
    return { error: 'apiVersion and kind must be strings' };
  }
  if (!/^[a-z0-9.]*\/?v[0-9a-z]+$/.test(object.apiVersion) || !/^[A-Z][A-Za-z0-9]*$/.test(object.kind)) {
    return { error: `unknown apiVersion/kind ${object.apiVersion}/${object.kind}` };
  }
  try {
    const module = require(`kubernetes-models/${object.apiVersion}/${object.kind}`);
    if (typeof module[object.kind] === 'function') return { model: module[object.kind] };
  } catch (error) {
    if (error.code !== 'MODULE_NOT_FOUND') throw error;
  }
  return { error: `no ${object.kind} in the Kubernetes API ${object.apiVersion}` };
}

function schemaErrors(object) {
  const { model, error } = modelOf(object);
  if (error) return [error];
  try {
    new model(object).validate();
    return [];
  } catch (failure) {
    return [failure.message];
  }
}

// --- What the API server and the kubelet check beyond the schema ------------

const WORKLOADS = new Set(['DaemonSet', 'Deployment', 'StatefulSet', 'ReplicaSet', 'Job']);

function podSpecOf(object) {
  if (object.kind === 'Pod') return object.spec;
  if (WORKLOADS.has(object.kind)) return object.spec && object.spec.template && object.spec.template.spec;
  if (object.kind === 'CronJob') {
    const job = object.spec && object.spec.jobTemplate && object.spec.jobTemplate.spec;
    return job && job.template && job.template.spec;
  }
  return undefined;
}

function keysOf(object) {
  return new Set([
    ...Object.keys(object.data || {}),
    ...Object.keys(object.stringData || {}),
    ...Object.keys(object.binaryData || {}),
  ]);
}

// A volume source naming a ConfigMap or Secret: the object must be among the
// manifests (same namespace) and hold every key the pod asks for, unless the
// source is optional; otherwise the pod never starts (ContainerCreating).
function checkReference(kind, name, items, optional, namespace, all, errors, where) {
  if (optional) return;
  const target = all.find(({ object }) => object.kind === kind && object.metadata &&
    object.metadata.name === name && (object.metadata.namespace || 'default') === namespace);
  if (!target) {
    errors.push(`${where}: ${kind} ${namespace}/${name} is in none of the manifests`);
    return;
  }
  const keys = keysOf(target.object);
  for (const item of items || []) {
    if (!keys.has(item.key)) errors.push(`${where}: ${kind} ${name} has no key ${item.key}`);
  }
}

function podErrors(object, all) {
  const spec = podSpecOf(object);
  if (!spec) return [];
  const errors = [];
  const namespace = (object.metadata && object.metadata.namespace) || 'default';
  const volumes = new Map((spec.volumes || []).map((volume) => [volume.name, volume]));
  if (volumes.size !== (spec.volumes || []).length) errors.push('two volumes have the same name');

  const containers = [...(spec.initContainers || []), ...(spec.containers || [])];
  const names = new Set();
  containers.forEach((container, index) => {
    const where = `container ${container.name || index}`;
    if (names.has(container.name)) errors.push(`${where}: the name is used twice`);
    names.add(container.name);
    if (!container.image) errors.push(`${where}: image: Required value`);
    for (const mount of container.volumeMounts || []) {
      if (!volumes.has(mount.name)) errors.push(`${where}: mounts volume ${mount.name}, which is not declared`);
    }
    const ports = new Set((container.ports || []).map((port) => port.name).filter(Boolean));
    for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
      const handler = container[probe] && (container[probe].tcpSocket || container[probe].httpGet);
      if (handler && typeof handler.port === 'string' && !ports.has(handler.port)) {
        errors.push(`${where}: ${probe} uses port ${handler.port}, which the container does not declare`);
      }
    }
  });

  for (const volume of volumes.values()) {
    const where = `volume ${volume.name}`;
    if (volume.configMap) {
      checkReference('ConfigMap', volume.configMap.name, volume.configMap.items, volume.configMap.optional,
        namespace, all, errors, where);
    }
    if (volume.secret) {
      checkReference('Secret', volume.secret.secretName, volume.secret.items, volume.secret.optional,
        namespace, all, errors, where);
    }
    for (const source of (volume.projected && volume.projected.sources) || []) {
      if (source.configMap) {
        checkReference('ConfigMap', source.configMap.name, source.configMap.items, source.configMap.optional,
          namespace, all, errors, where);
      }
      if (source.secret) {
        checkReference('Secret', source.secret.name, source.secret.items, source.secret.optional,
          namespace, all, errors, where);
      }
    }
  }

  if (WORKLOADS.has(object.kind) && object.spec.selector && object.spec.selector.matchLabels) {
    const labels = (object.spec.template.metadata && object.spec.template.metadata.labels) || {};
    for (const [key, value] of Object.entries(object.spec.selector.matchLabels)) {
      if (labels[key] !== value) errors.push(`selector ${key}=${value} does not match the template's labels`);
    }
  }
  return errors;
}

// --- Commands ---------------------------------------------------------------------

function validate(files) {
  const all = files.flatMap(readObjects);
  if (all.length === 0) die('no objects in ' + files.join(' '));
  let failed = 0;
  for (const entry of all) {
    const errors = [...schemaErrors(entry.object), ...podErrors(entry.object, all)];
    if (errors.length === 0) {
      process.stdout.write(`ok ${describe(entry)}\n`);
    } else {
      failed += 1;
      process.stdout.write(`INVALID ${describe(entry)}: ${errors.join('; ')}\n`);
    }
  }
  process.stdout.write(`${all.length - failed} of ${all.length} objects valid\n`);
  return failed === 0 ? 0 : 1;
}

function get(selector, key, files) {
  const [kind, name] = selector.split('/');
  const entry = files.flatMap(readObjects).find(({ object }) =>
    object.kind === kind && object.metadata && object.metadata.name === name);
  if (!entry) die(`no ${selector} in ${files.join(' ')}`);
  const { data = {}, stringData = {} } = entry.object;
  if (key in stringData) return process.stdout.write(stringData[key]), 0;
  if (key in data) {
    const value = kind === 'Secret' ? Buffer.from(data[key], 'base64').toString('utf8') : data[key];
    return process.stdout.write(value), 0;
  }
  die(`${selector} has no key ${key}`);
}

function main(args) {
  if (args[0] === '--get') {
    if (args.length < 4) die('usage: validate.js --get KIND/NAME KEY FILE...');
    return get(args[1], args[2], args.slice(3));
  }
  if (args.length === 0 || args[0].startsWith('-')) die('usage: validate.js FILE... | --get KIND/NAME KEY FILE...');
  return validate(args);
}

process.exitCode = main(process.argv.slice(2));
