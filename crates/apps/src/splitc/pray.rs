//! P-ray: a parallel ray tracer with bulk puts (IPPS 1996 Section 5.3,
//! Table 2: "a parallel ray-tracer program, which uses bulk put
//! operations").
//!
//! A seeded scene of spheres on a large floor sphere, lit by one point
//! light, is traced with one ray per pixel: the nearest sphere the ray
//! hits, a shadow ray towards the light, and Lambert shading with an
//! ambient term (or the sky's gradient where the ray hits nothing). The
//! image is cut into bands of `band_rows` rows dealt out round robin (band
//! k to node k mod P), so the costly rows near the scene's objects spread
//! over the nodes. Each node renders its bands into its own segment and
//! bulk-puts each finished band into the frame buffer on node 0 at once,
//! so its puts travel while it renders the next band; it syncs its puts at
//! the end, and a barrier makes the whole image node 0's.
//!
//! Pixels are 8-bit RGB in one word. The parallel and the sequential
//! renderings run the same floating-point operations on the same inputs in
//! the same order, so the images must agree exactly.
//!
//! The paper gives no input size. [`PrayConfig::paper`] renders 512 × 512
//! pixels of 64 spheres in bands of 8 rows; [`PrayConfig::quick`] 128 × 128
//! of 16 spheres in bands of 4.

use super::mm::unit;
use super::{Phases, SplitcProgram};
use finegrain_core::{AmError, NodeId, Proc, Work};
use finegrain_splitc::{GlobalPtr, SplitNode};
use rand::RngCore;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One ray-sphere test (`Sphere::hit` up to the discriminant's sign, in
/// the loop over the spheres): `oc` (3 subtracts), `b` (a dot product: 3
/// multiplies, 2 adds), `b * b`, `oc · oc` (5), the squared radius, the
/// two subtractions and the compare with 0: 18 flops; the loop (3
/// integer) and the branch (1); loads of the centre and the radius.
pub const RAY_SPHERE_TEST: Work = Work::new(18, 0, 4, 4, 0);

/// A test whose discriminant is not negative, beyond [`RAY_SPHERE_TEST`]:
/// the square root (long), `-b`, `-b - root`, `-b + root`, the compare
/// with epsilon and the compare with the nearest so far or the light's
/// distance (5 flops); their two branches and keeping the nearest (3
/// integer).
pub const RAY_SPHERE_ROOT: Work = Work::new(5, 1, 3, 0, 0);

/// Every pixel's primary ray and quantization (`Scene::pixel`): the
/// aspect ratio (a divide; the converts shared with the next two), the
/// ray's x (convert, add, multiply, convert, divide, subtract, two
/// multiplies: 7 flops, 1 long) and y (6 flops, 1 long), `normalize` (a
/// dot product, a square root, a reciprocal and 3 multiplies: 8 flops, 2
/// long), and three channels' clamp (2 compares), scale, round (2) and
/// convert (6 flops each); the channels' shifts and ors (4 integer) and the
/// loop over the band's pixels (3); loads of the width and the height, a
/// store of the pixel.
pub const PRIMARY_RAY: Work = Work::new(39, 5, 7, 2, 1);

/// A pixel whose ray hits nothing: the sky's gradient (a multiply and an
/// add, 3 multiplies) and the branch.
pub const SKY: Work = Work::new(5, 0, 1, 0, 0);

/// Shading a pixel whose ray hits a sphere: the hit point (3 multiplies),
/// the normal (3 subtracts and `normalize`: 8 flops, 2 long), the light
/// vector (3 subtracts, `normalize`), the Lambert dot product (5), its
/// `max` and its test (2), the shade (a multiply and an add) and the
/// colour's scale (3): 37 flops, 4 long; the sphere's address, the branch
/// on the Lambert term and on the shadow (3 integer); loads of the centre,
/// the light and the colour.
pub const SHADE: Work = Work::new(37, 4, 3, 9, 0);

/// Setting up a shadow ray (`Scene::shadowed`, before its tests): the
/// vector to the light (3 subtracts), its length (a dot product and a
/// square root), the direction (a reciprocal and 3 multiplies): 11 flops,
/// 2 long; the call (1 integer); loads of the light.
pub const SHADOW_RAY: Work = Work::new(11, 2, 1, 3, 0);

/// The ray tracer's image and scene.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrayConfig {
    pub width: u64,
    pub height: u64,
    /// Spheres besides the floor.
    pub spheres: u64,
    /// Rows in a band, the unit dealt to a node and put to node 0.
    pub band_rows: u64,
    pub seed: u64,
}

impl PrayConfig {
    /// 512 × 512 pixels, 64 spheres, bands of 8 rows (the paper gives no
    /// size).
    pub fn paper() -> PrayConfig {
        PrayConfig { width: 512, height: 512, spheres: 64, band_rows: 8, seed: 1996 }
    }

    /// 128 × 128 pixels, 16 spheres, bands of 4 rows.
    pub fn quick() -> PrayConfig {
        PrayConfig { width: 128, height: 128, spheres: 16, band_rows: 4, seed: 1996 }
    }

    /// 24 × 16 pixels, 6 spheres, bands of 2 rows, for tests.
    pub fn tiny() -> PrayConfig {
        PrayConfig { width: 24, height: 16, spheres: 6, band_rows: 2, seed: 7 }
    }

    /// Checks the configuration for `nodes` nodes; the error names the
    /// field and what is allowed.
    pub fn validate(&self, nodes: u32) -> Result<(), String> {
        if self.width == 0 || self.height == 0 || self.spheres == 0 {
            return Err(format!(
                "pray: width = {}, height = {}, spheres = {}; allowed: 1 or more of each",
                self.width, self.height, self.spheres
            ));
        }
        if self.band_rows == 0 || !self.height.is_multiple_of(self.band_rows) {
            return Err(format!(
                "pray: band_rows = {} for height = {}; allowed: a divisor of the height, 1 or more",
                self.band_rows, self.height
            ));
        }
        if nodes == 0 {
            return Err("pray: 0 nodes; allowed: 1 or more".into());
        }
        Ok(())
    }

    fn bands(&self) -> u64 {
        self.height / self.band_rows.max(1)
    }

    /// Bands node `node` renders.
    fn bands_of(&self, node: u64, nodes: u64) -> impl Iterator<Item = u64> {
        (node..self.bands()).step_by(nodes as usize)
    }
}

/// A node's answer: how many bands it rendered and a checksum of them;
/// node 0's also holds the whole image from its frame buffer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrayAnswer {
    pub bands: u64,
    pub checksum: u64,
    /// Row-major pixels (node 0 only; empty elsewhere).
    pub image: Vec<u64>,
}

type Vec3 = [f64; 3];

fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn scale(a: Vec3, k: f64) -> Vec3 {
    [a[0] * k, a[1] * k, a[2] * k]
}

fn normalize(a: Vec3) -> Vec3 {
    scale(a, 1.0 / dot(a, a).sqrt())
}

#[derive(Clone, Copy, Debug)]
struct Sphere {
    center: Vec3,
    radius: f64,
    color: Vec3,
}

impl Sphere {
    /// The nearest distance beyond a small epsilon along the unit ray
    /// `dir` from `origin` at which it meets the sphere; counts the test
    /// (and the root it takes) in `traced`.
    fn hit(&self, origin: Vec3, dir: Vec3, traced: &mut Traced) -> Option<f64> {
        const EPSILON: f64 = 1e-6;
        traced.tests += 1;
        let oc = sub(origin, self.center);
        let b = dot(oc, dir);
        let disc = b * b - (dot(oc, oc) - self.radius * self.radius);
        if disc < 0.0 {
            return None;
        }
        traced.roots += 1;
        let root = disc.sqrt();
        [-b - root, -b + root].into_iter().find(|&t| t > EPSILON)
    }
}

/// The scene: the camera at the origin looking down -z, the light above
/// and behind it.
struct Scene {
    spheres: Vec<Sphere>,
    light: Vec3,
    width: u64,
    height: u64,
}

/// What tracing did: ray-sphere tests made (and those that took a root),
/// pixels traced (and those whose ray hit a sphere), shadow rays cast.
#[derive(Clone, Copy, Debug, Default)]
struct Traced {
    tests: u64,
    roots: u64,
    pixels: u64,
    shaded: u64,
    shadow_rays: u64,
}

impl Traced {
    /// The counted work of it.
    fn work(&self) -> Work {
        RAY_SPHERE_TEST * self.tests
            + RAY_SPHERE_ROOT * self.roots
            + PRIMARY_RAY * self.pixels
            + SKY * (self.pixels - self.shaded)
            + SHADE * self.shaded
            + SHADOW_RAY * self.shadow_rays
    }
}

const AMBIENT: f64 = 0.15;

impl Scene {
    /// The seeded scene: spheres in a box in front of the camera over a
    /// floor sphere (the first).
    fn new(cfg: &PrayConfig) -> Scene {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let mut r = || (unit(rng.next_u64()) + 1.0) / 2.0;
        let floor = Sphere { center: [0.0, -1003.0, -10.0], radius: 1000.0, color: [0.8, 0.8, 0.7] };
        let mut spheres = vec![floor];
        for _ in 0..cfg.spheres {
            let center = [8.0 * r() - 4.0, 5.0 * r() - 3.0, -6.0 - 10.0 * r()];
            let radius = 0.3 + 0.9 * r();
            let color = [0.2 + 0.8 * r(), 0.2 + 0.8 * r(), 0.2 + 0.8 * r()];
            spheres.push(Sphere { center, radius, color });
        }
        Scene { spheres, light: [6.0, 10.0, 2.0], width: cfg.width, height: cfg.height }
    }

    /// The nearest sphere the ray hits and its distance.
    fn nearest(&self, origin: Vec3, dir: Vec3, traced: &mut Traced) -> Option<(usize, f64)> {
        let hits = self.spheres.iter().enumerate().filter_map(|(x, s)| s.hit(origin, dir, traced).map(|t| (x, t)));
        hits.fold(None, |best, (x, t)| match best {
            Some((_, bt)) if bt <= t => best,
            _ => Some((x, t)),
        })
    }

    /// Whether anything lies between `point` and the light.
    fn shadowed(&self, point: Vec3, traced: &mut Traced) -> bool {
        traced.shadow_rays += 1;
        let to_light = sub(self.light, point);
        let distance = dot(to_light, to_light).sqrt();
        let dir = scale(to_light, 1.0 / distance);
        for s in &self.spheres {
            if s.hit(point, dir, traced).is_some_and(|t| t < distance) {
                return true;
            }
        }
        false
    }

    /// The pixel at column x, row y, as 8-bit RGB in one word.
    fn pixel(&self, x: u64, y: u64, traced: &mut Traced) -> u64 {
        traced.pixels += 1;
        let aspect = self.width as f64 / self.height as f64;
        let px = (2.0 * (x as f64 + 0.5) / self.width as f64 - 1.0) * aspect * 0.6;
        let py = (1.0 - 2.0 * (y as f64 + 0.5) / self.height as f64) * 0.6;
        let dir = normalize([px, py, -1.0]);
        let color = match self.nearest([0.0; 3], dir, traced) {
            None => {
                let sky = 0.5 + 0.5 * dir[1];
                [0.5 * sky, 0.7 * sky, 1.0 * sky]
            }
            Some((x, t)) => {
                traced.shaded += 1;
                let s = &self.spheres[x];
                let point = scale(dir, t);
                let normal = normalize(sub(point, s.center));
                let lambert = dot(normal, normalize(sub(self.light, point))).max(0.0);
                let lit = if lambert > 0.0 && !self.shadowed(point, traced) { lambert } else { 0.0 };
                scale(s.color, AMBIENT + (1.0 - AMBIENT) * lit)
            }
        };
        let byte = |c: f64| (c.clamp(0.0, 1.0) * 255.0).round() as u64;
        byte(color[0]) << 16 | byte(color[1]) << 8 | byte(color[2])
    }

    /// The rows of band `band`, row-major.
    fn band(&self, band: u64, rows: u64, traced: &mut Traced) -> Vec<u64> {
        let first = band * rows;
        (first..first + rows)
            .flat_map(|y| (0..self.width).map(move |x| (x, y)))
            .map(|(x, y)| self.pixel(x, y, traced))
            .collect()
    }
}

/// A checksum of the bands a node rendered: each pixel mixed with its
/// position, so a pixel in the wrong place changes it too.
fn checksum(image_words: impl Iterator<Item = (u64, u64)>) -> u64 {
    image_words.fold(0xcbf2_9ce4_8422_2325, |h, (at, px)| {
        (h ^ (at.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ px)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl SplitcProgram for PrayConfig {
    type Answer = PrayAnswer;

    fn name(&self) -> &'static str {
        "pray"
    }

    fn input(&self, nodes: u32) -> String {
        format!(
            "{} x {} pixels, {} spheres and a floor, bands of {} rows dealt round robin to {nodes} nodes (the \
             paper gives no size)",
            self.width, self.height, self.spheres, self.band_rows
        )
    }

    fn segment_words(&self, nodes: u32) -> u64 {
        let band = self.width.saturating_mul(self.band_rows);
        let mine = self.bands().div_ceil(nodes.max(1) as u64).saturating_mul(band);
        self.width.saturating_mul(self.height).saturating_add(mine).saturating_add(2 * nodes as u64 + 1)
    }

    async fn run<P: Proc>(&self, s: &SplitNode<'_, P>, phases: &mut Phases) -> Result<PrayAnswer, AmError> {
        self.validate(s.procs()).map_err(AmError::NotAllowed)?;
        let pixels = self.width * self.height;
        let band_words = self.width * self.band_rows;
        let frame = s.alloc(pixels)?;
        let mine = s.alloc(self.bands().div_ceil(s.procs() as u64) * band_words)?;
        let scene = Scene::new(self);
        let (me, nodes) = (s.me().0 as u64, s.procs() as u64);
        let mut sum = Vec::new();
        let mut bands = 0;
        for (local, band) in self.bands_of(me, nodes).enumerate() {
            let t0 = s.proc().now();
            let mut traced = Traced::default();
            let rows = scene.band(band, self.band_rows, &mut traced);
            let at = mine + local as u64 * band_words;
            s.local().write(at, &rows);
            s.proc().charge_work(traced.work());
            phases.add("compute", s.proc().now() - t0);
            phases.count("ray_sphere_tests", traced.tests);

            let t0 = s.proc().now();
            s.put(GlobalPtr::new(NodeId(0), frame + band * band_words), at, band_words).await?;
            phases.add("communicate", s.proc().now() - t0);
            phases.count("bulk_puts", 1);
            sum.extend((0..band_words).map(|w| band * band_words + w).zip(rows));
            bands += 1;
        }
        let t0 = s.proc().now();
        s.sync().await?;
        s.barrier().await?;
        phases.add("communicate", s.proc().now() - t0);
        let mut image = Vec::new();
        if me == 0 {
            image = vec![0; pixels as usize];
            s.local().read(frame, &mut image);
        }
        Ok(PrayAnswer { bands, checksum: checksum(sum.into_iter()), image })
    }

    fn check(&self, nodes: u32, answers: &[&PrayAnswer]) -> Result<(), String> {
        let scene = Scene::new(self);
        let mut traced = Traced::default();
        let band_words = self.width * self.band_rows;
        let image: Vec<u64> = (0..self.bands()).flat_map(|b| scene.band(b, self.band_rows, &mut traced)).collect();
        let Some(first) = answers.first() else { return Err("pray: no node answered".into()) };
        if first.image != image {
            let x = first.image.iter().zip(&image).position(|(g, w)| g != w).unwrap_or(0);
            return Err(format!(
                "node 0's frame buffer: {} pixels, pixel {x} (row {}, column {}) is {:#08x?}, expected {:#08x}",
                first.image.len(),
                x as u64 / self.width,
                x as u64 % self.width,
                first.image.get(x),
                image.get(x).copied().unwrap_or(0)
            ));
        }
        for (node, answer) in answers.iter().enumerate() {
            let mine: Vec<u64> = self.bands_of(node as u64, nodes as u64).collect();
            let words =
                mine.iter().flat_map(|&b| (b * band_words..(b + 1) * band_words).map(|w| (w, image[w as usize])));
            let want = checksum(words);
            if answer.bands != mine.len() as u64 || answer.checksum != want {
                return Err(format!(
                    "node {node}: rendered {} bands with checksum {:#x}, expected {} bands with checksum {want:#x}",
                    answer.bands,
                    answer.checksum,
                    mine.len()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ray_meets_a_sphere_in_front_and_not_behind() {
        let s = Sphere { center: [0.0, 0.0, -5.0], radius: 1.0, color: [1.0; 3] };
        let mut traced = Traced::default();
        assert_eq!(s.hit([0.0; 3], [0.0, 0.0, -1.0], &mut traced), Some(4.0));
        assert_eq!(s.hit([0.0; 3], [0.0, 0.0, 1.0], &mut traced), None);
        assert_eq!(s.hit([0.0; 3], [0.0, 1.0, 0.0], &mut traced), None);
        assert_eq!((traced.tests, traced.roots), (3, 2));
    }

    #[test]
    fn the_image_shows_spheres_sky_and_shadow() {
        let cfg = PrayConfig::quick();
        let scene = Scene::new(&cfg);
        let mut traced = Traced::default();
        let image: Vec<u64> = (0..cfg.bands()).flat_map(|b| scene.band(b, cfg.band_rows, &mut traced)).collect();
        let distinct: std::collections::BTreeSet<u64> = image.iter().copied().collect();
        assert!(distinct.len() > 100, "{} colours", distinct.len());
        assert_eq!(traced.pixels, cfg.width * cfg.height);
        assert!(traced.tests > traced.pixels * (cfg.spheres + 1));
        assert!(0 < traced.shaded && traced.shaded < traced.pixels && traced.shadow_rays <= traced.shaded);
    }

    #[test]
    fn bands_are_dealt_round_robin() {
        let cfg = PrayConfig::tiny();
        assert_eq!(cfg.bands_of(1, 3).collect::<Vec<_>>(), [1, 4, 7]);
        let all: usize = (0..3).map(|n| cfg.bands_of(n, 3).count()).sum();
        assert_eq!(all as u64, cfg.bands());
    }
}
