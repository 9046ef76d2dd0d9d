#!/usr/bin/env node
// Pitroom's npm launcher. The binaries (`pitroom` and, beside it, `pitroom-guard`) come in one
// optional package per platform; this finds the one npm installed and runs its `pitroom` with
// our arguments and stdio, then ends the way it ended: its exit code, or the signal that ended
// it raised again on this process. Plain Node >= 18, no dependencies.
'use strict';

const { spawn } = require('child_process');
const os = require('os');
const path = require('path');

const PACKAGES = {
  'linux-x64': '@pitroom/linux-x64',
  'linux-arm64': '@pitroom/linux-arm64',
  'darwin-arm64': '@pitroom/darwin-arm64',
  'darwin-x64': '@pitroom/darwin-x64',
};

const version = require('../package.json').version;

function fail(lines) {
  process.stderr.write(lines.map((line) => `pitroom: ${line}\n`).join(''));
  process.exit(1);
}

const fromSource = 'from source, in a checkout of the repository: cargo install --locked --path crates/pitroom';

// The `pitroom` binary to run: $PITROOM_BINARY, else the platform package's. Its directory
// matters: `pitroom` looks for `pitroom-guard` beside itself.
function binary() {
  if (process.env.PITROOM_BINARY) {
    return process.env.PITROOM_BINARY;
  }
  const platform = `${process.platform}-${process.arch}`;
  const pkg = PACKAGES[platform];
  if (!pkg) {
    fail([
      `no prebuilt binary for ${platform} (npm packages exist for ${Object.keys(PACKAGES).join(', ')}).`,
      `Build it ${fromSource}`,
      'On Windows, WSL2 runs the Linux build.',
    ]);
  }
  let manifest;
  try {
    // From this file: the launcher's own node_modules (where npm puts the optional dependency),
    // then every node_modules above it — a global prefix's lib/node_modules holds the platform
    // package as a sibling when it was installed on its own.
    manifest = require.resolve(`${pkg}/package.json`, { paths: [__dirname] });
  } catch (err) {
    fail([
      `the package ${pkg}@${version}, which holds Pitroom's binaries for ${platform}, is not installed.`,
      'npm leaves optional dependencies out when told to (--omit=optional, --no-optional,',
      '`omit=optional` in an .npmrc, NPM_CONFIG_OMIT) and when it could not fetch one.',
      'Reinstall with them:',
      `  npm install -g pitroom@${version} --include=optional`,
      `or build ${fromSource}`,
      'or point PITROOM_BINARY at a pitroom binary.',
    ]);
  }
  return path.join(path.dirname(manifest), 'bin', 'pitroom');
}

const bin = binary();
const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit' });

// A signal sent to this process alone (a supervisor's SIGTERM) reaches the binary too. A
// terminal's Ctrl-C reaches both already; Pitroom treats a second stop signal like the first.
const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];
const forward = (signal) => {
  try {
    child.kill(signal);
  } catch (_) {
    // The child is gone already: its exit event follows.
  }
};
for (const signal of forwarded) {
  process.on(signal, forward);
}

child.on('error', (err) => {
  fail([`could not run ${bin}: ${err.message}`]);
});

child.on('exit', (code, signal) => {
  if (signal) {
    // End the same way: our own listeners off, the default action back, the signal raised.
    for (const s of forwarded) {
      process.removeListener(s, forward);
    }
    try {
      process.kill(process.pid, signal);
    } catch (_) {
      // Fall through to the shell's convention below.
    }
    // Signals Node ignores (SIGPIPE) or that did not end us: 128 + the signal's number.
    setTimeout(() => process.exit(128 + (os.constants.signals[signal] || 0)), 100);
    return;
  }
  process.exit(code === null ? 1 : code);
});
