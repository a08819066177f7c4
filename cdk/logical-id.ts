/**
 * The stack's pinned logical ids, apart so that every builder of the stack's resources pins what it
 * creates the same way.
 */
import type { CfnResource } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/** Logical id = construct id (no hash): a stable contract, and moving the construct never replaces it. */
export function pinLogicalId(construct: IConstruct): void {
  (construct.node.defaultChild as CfnResource).overrideLogicalId(construct.node.id);
}
