import { describe, expect, it } from 'vitest';
import type { Host } from '../../../lambdas/contract';
import { enrichHost } from '../../../lambdas/domain';
import type { InstanceInfo } from '../../../lambdas/domain/types';

const HOST: Host = { instance_id: 'i-0abc12345def67890', instance_type: 'p5.48xlarge', region: 'us-east-1' };
const EC2: InstanceInfo = {
  instance_id: HOST.instance_id,
  region: 'us-east-1',
  state: 'running',
  instance_type: 'p5.48xlarge',
  tags: {
    team: 'research',
    job: 'sweep-7',
    'gpu-sentinel:remediation': 'off',
    'aws:autoscaling:groupName': 'g',
    Name: 'x',
  },
  asg: { name: 'train-p5', desired_capacity: 20, tags: {} },
};

describe('enrichHost', () => {
  it('fills team, job and the opt-out tag from EC2 when IMDS sent no tags, and no other tag', () => {
    expect(enrichHost(HOST, EC2).tags).toEqual({
      team: 'research',
      job: 'sweep-7',
      'gpu-sentinel:remediation': 'off',
    });
  });

  it("keeps the agent's IMDS tag where it sent one", () => {
    expect(enrichHost({ ...HOST, tags: { team: 'training' } }, EC2).tags).toMatchObject({
      team: 'training',
      job: 'sweep-7',
    });
  });

  it.each<[string, Host, InstanceInfo, string | undefined]>([
    ['the real group over the claimed one', { ...HOST, asg_name: 'forged' }, EC2, 'train-p5'],
    [
      'no group when Auto Scaling knows none, whatever the agent claims',
      { ...HOST, asg_name: 'forged' },
      { ...EC2, asg: undefined },
      undefined,
    ],
  ])('takes %s', (_name, host, info, group) => {
    expect(enrichHost(host, info).asg_name).toBe(group);
  });

  it('takes the instance type from EC2 and leaves the input untouched', () => {
    // Prepare
    const host = { ...HOST, instance_type: 'p4d.24xlarge' };
    // Act
    const out = enrichHost(host, EC2);
    // Assess
    expect(out.instance_type).toBe('p5.48xlarge');
    expect(host.instance_type).toBe('p4d.24xlarge');
    expect(host.tags).toBeUndefined();
  });

  it('adds no tags object when neither side has a tag the pipeline reads', () => {
    expect(enrichHost(HOST, { ...EC2, tags: { Name: 'x' } })).not.toHaveProperty('tags');
  });
});
