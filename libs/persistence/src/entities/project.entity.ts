import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import type { Capability, PlanName } from '#libs/contracts';

/** A customer project: its plan, the capabilities enabled on it, and its credits. */
@Entity('projects')
export class ProjectEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') name!: string;
  @Column('text') plan!: PlanName;
  @Column('text', { array: true }) capabilities!: Capability[];
  /** Credits left; never below 0 (a CHECK constraint holds it). */
  @Column('integer', { name: 'credit_balance' }) creditBalance!: number;
  /** Whether credits were ever purchased: sessions need it. */
  @Column('boolean', { name: 'credits_purchased' }) creditsPurchased!: boolean;
  /** Start of the current monthly billing period (quota and X-RateLimit-Reset). */
  @Column('timestamptz', { name: 'period_start' }) periodStart!: Date;
  /** Initial requests admitted in the current billing period (the monthly quota's counter). */
  @Column('integer', { name: 'requests_used' }) requestsUsed!: number;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt!: Date;
}
