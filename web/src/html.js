// Preact with htm: tagged templates instead of JSX, so the sources are plain
// ES modules (node's test runner imports the logic without a build step).
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
