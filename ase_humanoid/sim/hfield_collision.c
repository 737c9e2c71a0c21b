/* A cheaper first test for MuJoCo's convex-geom : heightfield collisions (native MuJoCo only).
 *
 * MuJoCo's own function (mjc_ConvexHField) lets a geom go when it lies above the heightfield's
 * highest point anywhere; below that (every body geom of a humanoid standing on the ground of a
 * field whose stairs rise 1.2 m elsewhere) it finds the geom's extent with six support calls and
 * walks the prisms under it, only to find none reaches up to it. This function first compares
 * the bottom of the geom's bounding sphere with the highest sample under that sphere's footprint
 * and returns no contact when the geom clears it; otherwise it calls MuJoCo's function. A prism's
 * top never exceeds the samples at its corners (plus the margin), and the footprint covers every
 * prism MuJoCo would test, so the contacts are exactly MuJoCo's.
 *
 * Installed by ase_humanoid/sim/hfield_collision.py into mjCOLLISIONFUNC (mujoco.h's public
 * collision table) for the heightfield row; built against the installed MuJoCo's headers.
 */
#include <math.h>
#include <stddef.h>

#include <mujoco/mjdata.h>
#include <mujoco/mjmodel.h>

/* MuJoCo's functions this one falls back to, by the other geom's type */
static mjfCollision mujoco_collider[mjNGEOMTYPES];

void ase_set_mujoco_collider(int geom_type, mjfCollision collider) {
  if (geom_type >= 0 && geom_type < mjNGEOMTYPES) mujoco_collider[geom_type] = collider;
}

int ase_convex_hfield(const mjModel* m, mjData* d, mjPreContact* con, int g1, int g2, mjtNum margin) {
  /* g1: the heightfield geom, g2: the convex geom (MuJoCo orders a pair by geom type) */
  int hid = m->geom_dataid[g1];
  const mjtNum* size = m->hfield_size + 4*hid;  /* x, y half extents, top, base */
  int nrow = m->hfield_nrow[hid], ncol = m->hfield_ncol[hid];
  const float* data = m->hfield_data + m->hfield_adr[hid];  /* [nrow, ncol] in [0, 1] of size[2] */

  /* the geom's centre in the heightfield's frame */
  const mjtNum* field_pos = d->geom_xpos + 3*g1;
  const mjtNum* field_mat = d->geom_xmat + 9*g1;
  const mjtNum* geom_pos = d->geom_xpos + 3*g2;
  mjtNum dx = geom_pos[0] - field_pos[0], dy = geom_pos[1] - field_pos[1], dz = geom_pos[2] - field_pos[2];
  mjtNum x = field_mat[0]*dx + field_mat[3]*dy + field_mat[6]*dz;
  mjtNum y = field_mat[1]*dx + field_mat[4]*dy + field_mat[7]*dz;
  mjtNum z = field_mat[2]*dx + field_mat[5]*dy + field_mat[8]*dz;
  mjtNum radius = m->geom_rbound[g2] + margin;

  /* samples under the bounding sphere's square footprint, clamped to the field */
  mjtNum per_x = (ncol - 1) / (2*size[0]), per_y = (nrow - 1) / (2*size[1]);
  int c0 = (int)floor((x - radius + size[0]) * per_x), c1 = (int)ceil((x + radius + size[0]) * per_x);
  int r0 = (int)floor((y - radius + size[1]) * per_y), r1 = (int)ceil((y + radius + size[1]) * per_y);
  if (c0 < 0) c0 = 0;
  if (r0 < 0) r0 = 0;
  if (c1 > ncol - 1) c1 = ncol - 1;
  if (r1 > nrow - 1) r1 = nrow - 1;
  if (c0 <= c1 && r0 <= r1) {
    float highest = 0.0f;
    for (int r = r0; r <= r1; r++) {
      const float* row = data + (size_t)r*ncol;
      for (int c = c0; c <= c1; c++) {
        if (row[c] > highest) highest = row[c];
      }
    }
    if (z - radius > highest*size[2] + margin) {
      return 0;  /* above every prism under it */
    }
  }
  return mujoco_collider[m->geom_type[g2]](m, d, con, g1, g2, margin);
}
