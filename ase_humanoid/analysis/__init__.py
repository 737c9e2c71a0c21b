"""Analysis of trained controllers: the skill report (what an ASE controller's latents do,
measured against the motion data) and its usability verdict."""
