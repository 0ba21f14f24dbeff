import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const PACKAGING = join(import.meta.dirname, '..', '..', '..', 'agent', 'packaging');

describe('image recipes', () => {
  it.each([
    { file: 'image-builder-component.yml', line: 'schemaVersion: 1.0' },
    { file: 'image-builder-component.yml', line: '  - name: build' },
    { file: 'image-builder-component.yml', line: '  - name: validate' },
    { file: 'image-builder-component.yml', line: '  - name: test' },
    { file: 'image-builder-component.yml', line: '  - BundleS3Uri:' },
    { file: 'image-builder-component.yml', line: "          - source: '{{ BundleS3Uri }}'" },
    { file: 'image-builder-component.yml', line: '            - gpu-sentinel-agent --version' },
    {
      file: 'image-builder-component.yml',
      line: '            - systemctl is-enabled gpu-sentinel-agent.service',
    },
    { file: 'packer-snippet.pkr.hcl', line: '      "gpu-sentinel-agent --version",' },
    { file: 'packer-snippet.pkr.hcl', line: '      "systemctl is-enabled gpu-sentinel-agent.service",' },
  ])('$file has `$line`', ({ file, line }) => {
    // Prepare / Act
    const lines = readFileSync(join(PACKAGING, file), 'utf8').split('\n');

    // Assess
    expect(lines).toContain(line);
  });

  it.each(['image-builder-component.yml', 'packer-snippet.pkr.hcl'])(
    '%s runs the bundle’s install.sh',
    (file) => {
      // Prepare / Act
      const text = readFileSync(join(PACKAGING, file), 'utf8');

      // Assess
      expect(text).toMatch(/\/agent\/install\.sh/);
      expect(text).not.toMatch(/\t/);
    },
  );

  it.each(['image-builder-component.yml', 'packer-snippet.pkr.hcl'])(
    '%s asks for no Node.js on the image and names the tarball of its architecture',
    (file) => {
      // Prepare / Act
      const text = readFileSync(join(PACKAGING, file), 'utf8');

      // Assess
      expect(text).not.toMatch(/command -v node|Node\.js >= 20/);
      expect(text).toContain('build.ts --sea --tarball');
      expect(text).toMatch(/linux-arm64/);
    },
  );
});
