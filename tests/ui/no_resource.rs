use reflector::Reflect;

#[derive(Reflect, Clone, serde::Serialize)]
pub struct Widget {
    #[reflect(index)]
    owner: String,
}

fn main() {}
